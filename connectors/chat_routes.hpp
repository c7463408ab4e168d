#pragma once
/// \file
/// The OpenAI-style HTTP API on the live view's server:
///
///   POST /v1/chat/completions   a question about camera://NAME's latest frame
///                               or a data-URL image; "stream": true answers
///                               as server-sent events, a chunk per token
///   GET  /v1/models             the pipeline's language model
///   GET  /v1/cameras            the cameras, their state and latest frame
///
/// Each client (by address) is held to a request rate, and its question and
/// image are checked against the limits before anything is decoded; what
/// is refused is counted by reason, every request by path and status.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "connectors/chat_api.hpp"
#include "connectors/chat_service.hpp"
#include "connectors/image_upload.hpp"
#include "connectors/peer_limits.hpp"

namespace httplib {
class Server;
}

namespace vlcache::connectors {

struct chat_endpoint_options {
  chat_limits limits;
  image_limits image;
  double requests_per_s = 2.0;  ///< per client, sustained
  double burst = 4.0;           ///< per client, at once
  sampling_options defaults;    ///< what a request leaves out
};

/// A camera as /v1/cameras lists it.
struct camera_status {
  std::string name;
  std::string state;  ///< waiting (no frame yet), live, idle (no frame for 10 s), ended
  std::uint64_t seq = 0;
  double capture_ms = 0;
  double seconds_since_frame = -1;  ///< -1: no frame yet
};

class chat_routes {
 public:
  using cameras_fn = std::function<std::vector<camera_status>()>;
  /// Adds the routes to `server`; the object must outlive its serving.
  [[nodiscard]] static std::shared_ptr<chat_routes> add(httplib::Server& server, std::shared_ptr<chat_service> service,
                                                        cameras_fn cameras, chat_endpoint_options options);
  /// The largest request body the routes take (an image at its limit, in base64).
  [[nodiscard]] static std::size_t max_body_bytes(const chat_endpoint_options& options);
  /// Prometheus text: requests by path and status, refusals by reason, tokens.
  [[nodiscard]] std::string metrics_text() const;

  /// Counting, for the handlers.
  void count_request(const std::string& path, int status);
  void count_refusal(const std::string& reason);

 private:
  chat_routes() = default;
  friend struct chat_handlers;
  std::shared_ptr<chat_service> service_;
  cameras_fn cameras_;
  chat_endpoint_options options_;
  mutable std::mutex mutex_;
  peer_limits clients_{peer_limits_config{}};
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> refused_;
  std::atomic<std::uint64_t> completion_tokens_{0}, prompt_tokens_{0}, cached_tokens_{0};
  std::atomic<std::uint64_t> next_id_{0};
};

}  // namespace vlcache::connectors
