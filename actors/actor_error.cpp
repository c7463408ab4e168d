#include "actors/actor_error.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

namespace vlcache::actors {

void register_error_category(caf::actor_system_config& cfg) {
  cfg.add_error_category(error_category, [](std::uint8_t code, caf::atom_value, const caf::message& context) {
    std::string text = "vlcache::";
    text += code == 0 ? "?" : to_string(static_cast<errc>(code - 1));  // see to_caf_error
    if (context.match_elements<std::string>()) text += ": " + context.get_as<std::string>(0);
    return text;
  });
}

vlcache::error from_caf_error(caf::actor_system& sys, const caf::error& e) {
  if (e.category() == error_category && e.code() >= 1 && e.code() <= static_cast<int>(errc::cancelled) + 1)
    return {static_cast<errc>(e.code() - 1), error_text(sys, e)};
  return {errc::cancelled, error_text(sys, e)};
}

std::string error_text(caf::actor_system& sys, const caf::error& e) {
  if (!e) return "no error";
  if (e.category() == error_category && e.context().match_elements<std::string>())
    return e.context().get_as<std::string>(0);
  return sys.render(e);
}

}  // namespace vlcache::actors
