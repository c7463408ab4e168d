#pragma once
/// \file
/// core/'s error values as caf::error, so they cross actor boundaries as
/// values (category "vlcache", code = errc, context = the message).

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include "core/base/error.hpp"

namespace caf { class actor_system_config; class actor_system; }

namespace vlcache::actors {

inline constexpr caf::atom_value error_category = caf::atom("vlcache");

/// Code 0 is "no error" to CAF 0.17, so errc's values travel shifted by one
/// (errc::invalid_argument, 0, would otherwise arrive as success).
[[nodiscard]] inline caf::error to_caf_error(const vlcache::error& e) {
  return caf::error(static_cast<std::uint8_t>(static_cast<int>(e.code) + 1), error_category,
                    caf::make_message(e.message));
}

/// Registers the "vlcache" category so errors render as text in logs.
void register_error_category(caf::actor_system_config& cfg);

/// Back to core/'s error: its code and message; another error (a timeout,
/// a dead actor) is errc::cancelled with CAF's text.
[[nodiscard]] vlcache::error from_caf_error(caf::actor_system& sys, const caf::error& e);

/// The message of a vlcache error as core/ wrote it; other errors rendered by CAF.
[[nodiscard]] std::string error_text(caf::actor_system& sys, const caf::error& e);

}  // namespace vlcache::actors
