#include "actors/actor_error.hpp"

#include <caf/actor_system_config.hpp>

namespace vlcache::actors {

void register_error_category(caf::actor_system_config& cfg) {
  cfg.add_error_category(error_category, [](std::uint8_t code, caf::atom_value, const caf::message& context) {
    std::string text = "vlcache::";
    text += to_string(static_cast<errc>(code));
    if (context.match_elements<std::string>()) text += ": " + context.get_as<std::string>(0);
    return text;
  });
}

}  // namespace vlcache::actors
