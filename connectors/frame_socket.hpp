#pragma once
/// \file
/// The ZeroMQ sockets camera frames travel over (wire_format messages):
/// the pipeline's [ingest] side pulls them, a camera node pushes them. Both
/// are bounded (high-water marks), so a slow pipeline makes cameras drop at
/// the sender instead of queueing without limit.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "connectors/curve_keys.hpp"
#include "connectors/wire_format.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

/// One message off the ingest socket: the decoded frame (or why it is not
/// one) and the sending peer's address when the transport knows it.
struct pulled_frame {
  expected<wire_frame> frame;
  std::string peer;      ///< the sender's address, when the transport knows it
  std::string identity;  ///< its CURVE key when the socket authenticates, else `peer`
  std::size_t bytes = 0;
  std::string refused;   ///< why the admission check refused it unparsed (frame then holds that error); "" if admitted
};

class frame_puller {
 public:
  /// Binds (or connects to) `endpoint`; the error names the endpoint. With
  /// `curve`, only the allowed client keys get through (connectors/curve_auth).
  [[nodiscard]] static expected<std::unique_ptr<frame_puller>> open(
      const std::string& endpoint, bool bind, const std::optional<curve_server_keys>& curve = std::nullopt,
      std::uint64_t max_message_bytes = max_wire_bytes);
  ~frame_puller();

  /// Waits up to `timeout` for a message, then takes up to `max` that are
  /// waiting; empty when none came.
  /// Says, from the sender and the size alone, why a message is refused ("" to admit it).
  using admission = std::function<std::string(const std::string& identity, std::size_t bytes)>;
  /// Up to `max` messages; each is checked by `admit` (when given) before
  /// its bytes are parsed, so a refused one costs no copy and no parse.
  [[nodiscard]] std::vector<pulled_frame> receive(std::chrono::milliseconds timeout, int max,
                                                  const admission& admit = {});

 private:
  struct impl;
  explicit frame_puller(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

class frame_pusher {
 public:
  /// Connects to a pipeline's [ingest] endpoint; the error names it. With
  /// `curve`, the connection is encrypted and authenticated.
  [[nodiscard]] static expected<std::unique_ptr<frame_pusher>> connect(
      const std::string& endpoint, const std::optional<curve_client_keys>& curve = std::nullopt);
  ~frame_pusher();

  /// Sends without waiting: false when the message was refused (no
  /// pipeline connected, or its queue is full).
  [[nodiscard]] bool send(const std::vector<std::uint8_t>& message);

 private:
  struct impl;
  explicit frame_pusher(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace vlcache::connectors
