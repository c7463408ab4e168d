#include "graph/host_port.hpp"

namespace vlcache::graph {

std::optional<host_port> parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int value = std::stoi(port);
  if (value > 65535) return std::nullopt;
  return host_port{text.substr(0, colon), static_cast<std::uint16_t>(value)};
}

}  // namespace vlcache::graph
