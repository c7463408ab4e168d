#include "connectors/live_view.hpp"
#include "core/base/elapsed.hpp"
#include "connectors/answer_json.hpp"

#include <httplib.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace vlcache::connectors {
namespace {

/// Connections served at once: each idle one holds a worker until its read
/// times out (5 s), so there are more workers than a page and its images
/// need by far.
constexpr std::size_t live_view_workers = 256;

long long now_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
}

/// The frame at twice its size with the patch grid drawn faintly and the
/// recomputed patches outlined: an outline, not a tint, so that the colours
/// inside (which questions ask about) stay true.
std::string render_jpeg(const view_frame& f) {
  const int size = f.image->size;
  cv::Mat rgb(size, size, CV_8UC3, const_cast<std::uint8_t*>(f.image->rgb.data()));
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  const int scale = size < 320 ? 2 : 1;
  cv::resize(bgr, bgr, cv::Size(size * scale, size * scale), 0, 0, cv::INTER_NEAREST);
  const int side = std::max(1, f.grid_side);
  const double cell = static_cast<double>(bgr.cols) / side;
  for (int i = 1; i < side; ++i) {
    const int x = static_cast<int>(i * cell);
    cv::line(bgr, cv::Point(x, 0), cv::Point(x, bgr.rows - 1), cv::Scalar(90, 90, 90), 1);
    cv::line(bgr, cv::Point(0, x), cv::Point(bgr.cols - 1, x), cv::Scalar(90, 90, 90), 1);
  }
  const int thickness = cell >= 24 ? 2 : 1;
  auto mark = [&](int p) {
    const int r = p / side, c = p % side;
    cv::rectangle(bgr, cv::Point(static_cast<int>(c * cell), static_cast<int>(r * cell)),
                  cv::Point(static_cast<int>((c + 1) * cell) - 1, static_cast<int>((r + 1) * cell) - 1),
                  cv::Scalar(255, 255, 255), thickness);
  };
  if (f.full) {
    for (int p = 0; p < side * side; ++p) mark(p);
  } else if (f.positions) {
    for (int p : *f.positions)
      if (p >= 0 && p < side * side) mark(p);
  }
  std::vector<std::uint8_t> out;
  cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, 85});
  return std::string(out.begin(), out.end());
}

}  // namespace

expected<std::unique_ptr<live_view>> live_view::start(const live_view_options& options, std::string title,
                                                      metrics_fn metrics, counters_fn counters) {
  std::unique_ptr<live_view> v(new live_view());
  v->options_ = options;
  v->title_ = std::move(title);
  v->metrics_ = std::move(metrics);
  v->counters_ = std::move(counters);
  std::shared_ptr<httplib::Server> server;
  if (!options.tls_cert.empty()) {
    auto tls = std::make_shared<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
    if (!tls->is_valid())
      return error{errc::invalid_config, "cannot serve HTTPS with certificate '" + options.tls_cert + "' and key '" +
                                             options.tls_key + "' (unreadable, not PEM, or not a pair)"};
    server = tls;
  } else {
    server = std::make_shared<httplib::Server>();
  }
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second pipeline on the same port binds too and gets half the requests.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // Bounded before anything is read: a body over 64 KiB (the view takes
  // none) is refused from its Content-Length; reads and writes time out; an
  // idle keep-alive connection goes after 2 s. Workers are many and idle
  // ones cheap, so 200 idle connections still leave /healthz an answer.
  server->set_payload_max_length(options.chat ? chat_routes::max_body_bytes(options.chat_options)
                                             : std::size_t{64} << 10);
  server->set_read_timeout(5, 0);
  server->set_write_timeout(5, 0);
  server->set_keep_alive_timeout(2);
  server->set_keep_alive_max_count(20);
  server->new_task_queue = [] { return new httplib::ThreadPool(live_view_workers); };
  live_view* self = v.get();
  if (!options.token.empty())
    server->set_pre_routing_handler([self, token = options.token](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
      std::string given;
      const std::string header = req.get_header_value("Authorization");
      if (header.rfind("Bearer ", 0) == 0) given = header.substr(7);
      else if (req.has_param("token")) given = req.get_param_value("token");
      // Compared in time independent of where they differ.
      unsigned char diff = given.size() != token.size();
      for (std::size_t i = 0; i < token.size(); ++i) diff |= token[i] ^ (i < given.size() ? given[i] : 0);
      if (diff == 0) return httplib::Server::HandlerResponse::Unhandled;
      ++self->unauthorized_;
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"vlcache\"");
      if (req.path.rfind("/v1/", 0) == 0)  // API clients read OpenAI's error shape
        res.set_content(error_body({401, given.empty() ? "no API key: send Authorization: Bearer TOKEN"
                                                         : "the API key is wrong",
                                    "", "invalid_api_key", 0})
                                .dump() +
                            "\n",
                        "application/json");
      else
        res.set_content("401: this view needs its token (Authorization: Bearer ..., or ?token=...)\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    });
  server->Get("/", [self](const httplib::Request&, httplib::Response& res) {
    self->watched();
    res.set_content(live_view_page(), "text/html; charset=utf-8");
  });
  server->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    std::string text = self->metrics_ ? self->metrics_() : std::string();
    if (!self->options_.token.empty())
      text += "# HELP vlcache_http_unauthorized_total Requests refused for want of the view's token.\n"
            "# TYPE vlcache_http_unauthorized_total counter\nvlcache_http_unauthorized_total " +
            std::to_string(self->unauthorized_.load()) + "\n";
    if (self->chat_) text += self->chat_->metrics_text();
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server->Get("/api/state", [self](const httplib::Request&, httplib::Response& res) {
    self->watched();
    res.set_header("Cache-Control", "no-store");
    res.set_content(to_json_line(self->state_json()), "application/json");
  });
  server->Get(R"(/frame/([^/]+)\.jpg)", [self](const httplib::Request& req, httplib::Response& res) {
    self->watched();
    std::string jpeg;
    if (!self->frame_jpeg(req.matches[1], jpeg)) {
      res.status = 404;
      res.set_content("no frame of stream '" + std::string(req.matches[1]) + "' yet\n", "text/plain");
      return;
    }
    res.set_header("Cache-Control", "no-store");
    res.set_content(jpeg, "image/jpeg");
  });
  if (options.chat)
    v->chat_ = chat_routes::add(*server, options.chat, [self] { return self->cameras(); }, options.chat_options);
  // Port 0: one the system picks (tests), read back into the options.
  const int bound = options.port == 0 ? server->bind_to_any_port(options.host)
                                      : (server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (bound < 0)
    return error{errc::io_error, "cannot listen on " + v->address() + " (in use, or not an address of this machine)"};
  v->options_.port = bound;
  v->server_ = server;
  v->thread_ = std::thread([server] { server->listen_after_bind(); });
  return v;
}

live_view::~live_view() { stop(); }

void live_view::stop() {
  if (!thread_.joinable()) return;
  auto* server = static_cast<httplib::Server*>(server_.get());
  // stop() only ends a loop that has begun: a view stopped right after it
  // started waits for its thread to be listening first.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!server->is_running() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server->stop();
  thread_.join();
}

std::string live_view::address() const {
  return (options_.tls_cert.empty() ? "http://" : "https://") + options_.host + ":" + std::to_string(options_.port);
}

int live_view::port() const noexcept { return options_.port; }

void live_view::watched() { last_watch_ms_ = now_ms(started_); }

void live_view::mark_ended() {
  long long running = -1;
  ended_ms_.compare_exchange_strong(running, now_ms(started_));
}

void live_view::offer_frame(view_frame frame) {
  const auto now = std::chrono::steady_clock::now();
  const long second = static_cast<long>(now_ms(started_) / 1000);
  const bool watching = now_ms(started_) - last_watch_ms_.load() < static_cast<long long>(options_.watch_timeout_s * 1000);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& s = streams_[frame.stream];
  const int total = frame.grid_side * frame.grid_side;
  if (s.history.empty() || s.history.back().second != second) s.history.push_back({second, 0, 0, 0});
  auto& b = s.history.back();
  ++b.frames;
  b.computed += static_cast<std::uint64_t>(frame.full ? total : frame.computed);
  b.total += static_cast<std::uint64_t>(total);
  while (!s.history.empty() && s.history.front().second < second - options_.history_s) s.history.pop_front();
  s.last_seq = frame.seq;
  s.last_capture_ms = frame.capture_ms;
  s.last_offered = now;
  s.offered = true;
  const double gap = seconds_between(s.last_kept, now);
  if (watching && frame.image && gap >= 1.0 / std::max(0.1, options_.max_view_fps)) {
    s.latest = std::move(frame);
    s.last_kept = now;
    ++kept_;
  } else if (!watching) {
    s.latest.image.reset();  // nobody looks: hold no pixels
  }
}

void live_view::write(const std::string& topic, const std::string& line) {
  if (line.find("\"kind\":\"answer\"") == std::string::npos) return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& stream = streams_[topic];
  ++stream.answered;
  if (j.contains("truth")) {
    ++stream.with_truth;
    stream.correct += j.value("correct", false);
  }
  auto& answers = stream.answers;
  answers.push_front(std::move(j));
  while (static_cast<int>(answers.size()) > options_.answers_kept) answers.pop_back();
}

nlohmann::json live_view::state_json() {
  nlohmann::json counters = counters_ ? counters_() : nlohmann::json::object();
  const long long ended = ended_ms_.load();
  nlohmann::json out{{"title", title_},
                     {"uptime_s", (ended >= 0 ? ended : now_ms(started_)) / 1000.0},
                     {"ended", ended >= 0},
                     {"streams", nlohmann::json::array()}};
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, s] : streams_) {
    nlohmann::json series = nlohmann::json::array();
    std::uint64_t frames = 0, computed = 0, total = 0;
    for (const auto& b : s.history) {
      series.push_back({b.second, b.total ? static_cast<double>(b.computed) / static_cast<double>(b.total) : 0.0});
      frames += b.frames;
      computed += b.computed;
      total += b.total;
    }
    const double share = total ? static_cast<double>(computed) / static_cast<double>(total) : 0.0;
    out["streams"].push_back({{"name", name},
                              {"seq", s.last_seq},
                              {"capture_ms", s.last_capture_ms},
                              {"frame_seq", s.latest.image ? s.latest.seq : 0},
                              {"has_frame", static_cast<bool>(s.latest.image)},
                              {"computed_share", share},
                              {"hit_rate", total ? 1.0 - share : 0.0},
                              {"frames_in_history", frames},
                              {"series", series},
                              {"answers", nlohmann::json(std::vector<nlohmann::json>(s.answers.begin(), s.answers.end()))},
                              {"answered", s.answered},
                              {"with_truth", s.with_truth},
                              {"correct", s.correct},
                              {"counters", counters.contains(name) ? counters[name] : nlohmann::json::object()}});
  }
  return out;
}

std::vector<camera_status> live_view::cameras() {
  const auto now = std::chrono::steady_clock::now();
  const bool ended = ended_ms_.load() >= 0;
  std::vector<camera_status> out;
  std::map<std::string, const stream_view*> named;  // the configured cameras and those that sent frames
  static const stream_view none;
  if (options_.chat)
    for (const auto& name : options_.chat->camera_names()) named.emplace(name, &none);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, s] : streams_) named[name] = &s;
  for (const auto& [name, view] : named) {
    const stream_view& s = *view;
    camera_status c;
    c.name = name;
    if (s.offered) {
      c.seq = s.last_seq;
      c.capture_ms = s.last_capture_ms;
      c.seconds_since_frame = seconds_between(s.last_offered, now);
    }
    c.state = ended ? "ended" : !s.offered ? "waiting" : c.seconds_since_frame > 10 ? "idle" : "live";
    out.push_back(std::move(c));
  }
  return out;
}

bool live_view::frame_jpeg(const std::string& stream, std::string& out) {
  view_frame f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream);
    if (it == streams_.end() || !it->second.latest.image) return false;
    if (it->second.jpeg_seq == it->second.latest.seq && !it->second.jpeg.empty()) {
      out = it->second.jpeg;
      return true;
    }
    f = it->second.latest;
  }
  out = render_jpeg(f);  // outside the lock: the pipeline never waits for JPEG encoding
  std::lock_guard<std::mutex> lock(mutex_);
  auto& s = streams_[stream];
  s.jpeg = out;
  s.jpeg_seq = f.seq;
  return true;
}

}  // namespace vlcache::connectors
