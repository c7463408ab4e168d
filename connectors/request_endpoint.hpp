#pragma once
/// \file
/// On-demand questions over ZeroMQ REQ/REP. A request is the JSON object
/// {"stream": NAME, "question": TEXT}; the reply is the answer's JSON line
/// (as the sinks publish it) or {"error": "..."} naming what was wrong.
/// The server runs its own thread; a bad request is answered with an error
/// and counted, and the server goes on.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <optional>

#include "connectors/curve_keys.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

class request_server {
 public:
  /// Returns the reply text (JSON) for a well-formed request.
  using handler = std::function<std::string(const std::string& stream, const std::string& question)>;

  /// Binds `endpoint` (tcp://HOST:PORT) before returning. With `curve`, only
  /// allowed client keys are answered (connectors/curve_auth). A question
  /// longer than `max_question_bytes` is refused with an error, counted.
  [[nodiscard]] static expected<std::unique_ptr<request_server>> start(
      const std::string& endpoint, handler h, const std::optional<curve_server_keys>& curve = std::nullopt,
      std::size_t max_question_bytes = 4000);
  ~request_server();

  [[nodiscard]] std::uint64_t served() const noexcept { return served_; }
  [[nodiscard]] std::uint64_t rejected() const noexcept { return rejected_; }

 private:
  request_server() = default;
  void serve(void* socket);
  handler handler_;
  std::size_t max_question_bytes_ = 4000;
  std::shared_ptr<void> context_, auth_, socket_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> served_{0}, rejected_{0};
};

/// One question to a pipeline's request endpoint (tcp://HOST:PORT, or
/// HOST:PORT); the reply text, or an error naming the endpoint: nothing
/// listening or a refused key within `connect_timeout_s`, no reply within
/// `timeout_s` after that.
[[nodiscard]] expected<std::string> ask_endpoint(const std::string& endpoint, const std::string& stream,
                                                 const std::string& question, double timeout_s,
                                                 const std::optional<curve_client_keys>& curve = std::nullopt,
                                                 double connect_timeout_s = 3.0);

}  // namespace vlcache::connectors
