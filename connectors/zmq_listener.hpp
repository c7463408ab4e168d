#pragma once
/// \file
/// Subscribes to a pipeline's ZeroMQ sink and hands each [topic][line]
/// message to a callback (used by `vlcache listen`).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "connectors/curve_keys.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

struct listen_options {
  std::string endpoint;      ///< tcp://HOST:PORT of the pipeline's zmq sink
  std::vector<std::string> streams;  ///< topic prefixes; empty: every stream
  int count = 0;             ///< stop after this many messages; 0: never
  /// Stop once every stream in `streams` (its exact topic) delivered this
  /// many messages; 0: off. A busy stream cannot use up a shared count.
  int each = 0;
  double timeout_s = 0.0;    ///< give up after this long without the count; 0: never
  std::optional<curve_client_keys> curve;  ///< a sink with [security]: our pair, its public key
  /// Called once the connection to the sink is up (its handshake, CURVE
  /// included, succeeded; our subscription goes right after): a PUB sink
  /// drops what a subscriber missed, so a caller may wait for this.
  std::function<void()> on_connected;
};

/// Returns the number of messages received, or an error naming the endpoint.
[[nodiscard]] expected<int> listen(const listen_options& options,
                                   const std::function<void(const std::string& topic, const std::string& line)>& on_line);

}  // namespace vlcache::connectors
