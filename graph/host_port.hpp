#pragma once
/// \file
/// HOST:PORT as the configs and options write it (`[encoder].remote`,
/// `[view].http`, `--http`): one parser, so every key accepts and refuses
/// the same text.

#include <cstdint>
#include <optional>
#include <string>

namespace vlcache::graph {

struct host_port {
  std::string host;  ///< may be empty (every interface, where a bind allows it)
  std::uint16_t port = 0;
};

/// Splits at the last colon; nothing when the port is missing, not a
/// decimal number, or above 65535.
[[nodiscard]] std::optional<host_port> parse_host_port(const std::string& text);

}  // namespace vlcache::graph
