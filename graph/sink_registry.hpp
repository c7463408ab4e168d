#pragma once
/// \file
/// The registry of sink kinds: each kind declares its keys once (name, help,
/// default), how to check a configured sink, and how to build it. The TOML
/// loader, `validate` and the runner all go through it, and a new kind is
/// one entry here.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connectors/line_sink.hpp"
#include "core/base/error.hpp"

namespace vlcache::graph {

struct sink_spec {
  std::string kind = "console";
  std::map<std::string, std::string> options;  ///< the kind's declared keys
};

struct sink_key {
  std::string name, help, default_value;
  bool required = false;
};

struct sink_kind_info {
  std::string name, help;
  std::vector<sink_key> keys;
  /// Problems with a configured sink, each prefixed with `where` ("[sink[0]].").
  std::function<std::vector<std::string>(const sink_spec&, const std::string& where)> check;
  /// `curve`: [security]'s keys, for kinds that serve the network.
  std::function<expected<std::unique_ptr<connectors::line_sink>>(
      const sink_spec&, const std::optional<connectors::curve_server_keys>& curve)>
      make;
};

[[nodiscard]] const std::vector<sink_kind_info>& sink_kinds();
[[nodiscard]] const sink_kind_info* find_sink_kind(const std::string& name);
/// "console, jsonl or zmq", for messages.
[[nodiscard]] std::string sink_kind_names();

}  // namespace vlcache::graph
