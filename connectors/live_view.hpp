#pragma once
/// \file
/// The live web view of a running pipeline (cpp-httplib, one server thread):
///
///   /                 a page with, per camera, the latest frame with its
///                     recomputed patches outlined (colours stay true), the share of
///                     tokens computed over the last minutes as a chart, the
///                     latest answers with their latencies, the counters
///   /api/state        the page's numbers as JSON (polled once a second)
///   /frame/NAME.jpg   the latest frame of a camera with the overlay
///   /metrics          Prometheus text format (from the pipeline's probe)
///   /healthz          liveness
///   /v1/...           the OpenAI-style API, when a chat service is given
///                     (connectors/chat_routes)
///
/// Serving never slows the pipeline: offer_frame() keeps a pointer to the
/// preprocessed frame at most `max_view_fps` times a second per camera, and
/// only while someone watched in the last `watch_timeout_s`; the JPEG is
/// encoded in the server thread when a browser asks for it.

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/chat_routes.hpp"
#include "connectors/line_sink.hpp"
#include "core/base/error.hpp"
#include "core/base/preprocess.hpp"

namespace vlcache::connectors {

/// What the pipeline hands the view for each frame leaving the encoder.
struct view_frame {
  std::string stream;
  std::uint64_t seq = 0;
  double capture_ms = 0;
  int grid_side = 0;       ///< patches per side
  int computed = 0;        ///< patch tokens recomputed
  bool full = false;       ///< every token recomputed
  std::shared_ptr<const std::vector<int>> positions;  ///< the recomputed patches (empty when full)
  std::shared_ptr<const preprocessed_image> image;
};

struct live_view_options {
  std::string host = "127.0.0.1";
  int port = 8080;  ///< 0: any free port (port() says which)
  double max_view_fps = 2.0;     ///< frames kept for the view per camera per second
  double watch_timeout_s = 10.0; ///< no request for this long: nobody is watching
  int history_s = 300;           ///< seconds of chart history per camera
  int answers_kept = 5;          ///< latest answers per camera
  /// HTTPS with this certificate and private key (PEM files); empty: HTTP.
  std::string tls_cert, tls_key;
  /// When set, every path but /healthz needs "Authorization: Bearer TOKEN"
  /// (or ?token=TOKEN, for the page's images); otherwise 401, counted.
  std::string token;
  /// The pipeline's answers over /v1/chat/completions; none: no /v1 routes.
  std::shared_ptr<chat_service> chat;
  chat_endpoint_options chat_options;
};

class live_view : public line_sink {
 public:
  /// Both callbacks run in the server thread: `metrics` returns the
  /// Prometheus text, `counters` a JSON object {stream name: {counter: value}}.
  using metrics_fn = std::function<std::string()>;
  using counters_fn = std::function<nlohmann::json()>;

  /// Binds HOST:PORT before returning; the error names the address.
  [[nodiscard]] static expected<std::unique_ptr<live_view>> start(const live_view_options& options,
                                                                  std::string title, metrics_fn metrics,
                                                                  counters_fn counters);
  ~live_view() override;
  /// Stops serving and joins the server thread (before the pipeline's actors go).
  void stop();

  /// The run is over: the page says so and its clock stops (the numbers are final).
  void mark_ended();

  /// Cheap, thread-safe: called for every frame.
  void offer_frame(view_frame frame);
  /// As a sink: keeps the answer lines (frame lines are ignored).
  void write(const std::string& topic, const std::string& line) override;
  [[nodiscard]] const char* kind() const noexcept override { return "live_view"; }

  [[nodiscard]] std::uint64_t frames_kept() const noexcept { return kept_; }
  [[nodiscard]] std::uint64_t unauthorized() const noexcept { return unauthorized_; }
  [[nodiscard]] std::string address() const;
  /// The port served on (the one the system picked when the options said 0).
  [[nodiscard]] int port() const noexcept;
  /// The cameras the chat service names and those that sent frames, with
  /// their latest frame (for /v1/cameras).
  [[nodiscard]] std::vector<camera_status> cameras();

 private:
  struct stream_view {
    view_frame latest;  // image set only while watched
    std::uint64_t last_seq = 0;
    double last_capture_ms = 0;
    std::chrono::steady_clock::time_point last_offered{};
    bool offered = false;
    std::chrono::steady_clock::time_point last_kept{};
    struct bucket {
      long second = 0;
      std::uint64_t frames = 0, computed = 0, total = 0;
    };
    std::deque<bucket> history;
    std::deque<nlohmann::json> answers;
    std::uint64_t answered = 0;  // answer lines this view received for the camera
    std::uint64_t with_truth = 0, correct = 0;  // of those, scored against a scene's truth, and right
    std::string jpeg;  // the encoded latest frame
    std::uint64_t jpeg_seq = 0;
  };

  live_view() = default;
  void watched();
  [[nodiscard]] nlohmann::json state_json();
  [[nodiscard]] bool frame_jpeg(const std::string& stream, std::string& out);

  live_view_options options_;
  std::string title_;
  metrics_fn metrics_;
  counters_fn counters_;
  std::shared_ptr<void> server_;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, stream_view> streams_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<long long> last_watch_ms_{-1000000000};
  std::atomic<long long> ended_ms_{-1};  // -1 while the run goes on
  std::atomic<std::uint64_t> kept_{0};
  std::atomic<std::uint64_t> unauthorized_{0};
  std::shared_ptr<chat_routes> chat_;
};

/// The page itself: HTML, CSS and JavaScript with no external resources.
[[nodiscard]] const std::string& live_view_page();

}  // namespace vlcache::connectors
