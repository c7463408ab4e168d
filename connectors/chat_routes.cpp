#include "connectors/chat_routes.hpp"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "core/base/elapsed.hpp"

namespace vlcache::connectors {
namespace {

using nlohmann::json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::int64_t unix_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// An error of the pipeline, as the API reports it.
api_error from_error(const error& e) {
  switch (e.code) {
    case errc::not_found: return {404, e.message, "messages", "camera_not_found", 0};
    case errc::busy: return {429, e.message, "", "busy", 1};
    case errc::capacity: return {400, e.message, "", "context_length_exceeded", 0};
    case errc::invalid_config: return {409, e.message, "", "not_served_by_this_pipeline", 0};
    case errc::invalid_argument:
    case errc::invalid_image: return {400, e.message, "", "", 0};
    case errc::cancelled: return {503, e.message, "", "unavailable", 1};
    default: return {500, e.message, "", "", 0};
  }
}

void send_error(httplib::Response& res, const api_error& e) {
  res.status = e.status;
  if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(static_cast<int>(e.retry_after_s + 0.999)));
  res.set_content(error_body(e).dump() + "\n", "application/json");
}

std::string sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

/// One streamed answer: the answerer's thread hands pieces over, the
/// server's thread writes them. The asker's thread lives as long as the
/// response; a client that leaves stops the answer at its next token.
struct stream_job {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> events;  // SSE lines ready to go
  bool done = false;
  std::optional<api_error> failed;
  std::atomic<bool> gone{false};
  std::thread asker;

  void push(std::string event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(std::move(event));
    }
    changed.notify_all();
  }
  void finish(std::optional<api_error> e) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      failed = std::move(e);
      done = true;
    }
    changed.notify_all();
  }
  /// In the server's thread, once the response is over (never in the asker's own).
  void join() {
    gone = true;
    if (asker.joinable()) asker.join();
  }
};

void count_tokens(std::atomic<std::uint64_t>& prompt, std::atomic<std::uint64_t>& cached,
                  std::atomic<std::uint64_t>& completion, const answer& a) {
  const token_usage u = usage_of(a);
  prompt += static_cast<std::uint64_t>(u.prompt);
  cached += static_cast<std::uint64_t>(u.cached);
  completion += static_cast<std::uint64_t>(u.completion);
}

}  // namespace

/// The handlers, with access to the routes' state.
struct chat_handlers {
  chat_routes& r;

  /// The request's client over its rate or size: the refusal, counted.
  std::optional<api_error> admit(const httplib::Request& req) {
    peer_verdict v;
    {
      std::lock_guard<std::mutex> lock(r.mutex_);
      v = r.clients_.admit_message(req.remote_addr, req.body.size(), now_s());
    }
    if (v == peer_verdict::admit) return std::nullopt;
    r.count_refusal(v == peer_verdict::too_fast ? "rate" : "body_size");
    if (v == peer_verdict::too_fast)
      return api_error{429, "too many requests from " + req.remote_addr + ": at most " +
                                json(r.options_.requests_per_s).dump() + " a second",
                       "", "rate_limit_exceeded", 1.0 / std::max(0.01, r.options_.requests_per_s)};
    return api_error{413, "the request body is too large", "", "request_too_large", 0};
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parse_chat_request(req.body, r.options_.limits, r.options_.defaults);
    if (auto* e = std::get_if<api_error>(&parsed)) {
      if (e->status == 413) r.count_refusal("question_size");
      return send_error(res, *e);
    }
    auto& q = std::get<chat_request>(parsed);
    const std::string model = r.service_->model_id();
    if (model.empty())
      return send_error(res, {409, "this pipeline has no language model ([llm] is not configured): it answers nothing",
                              "", "no_language_model", 0});
    if (!q.model.empty() && q.model != model)
      return send_error(res, {404, "The model `" + q.model + "` does not exist (this pipeline serves `" + model + "`)",
                              "model", "model_not_found", 0});
    std::optional<owned_image> image;
    if (!q.image_url.empty()) {
      auto decoded = decode_data_url(q.image_url, r.options_.image);
      if (!decoded) {
        const bool over = decoded.err().code == errc::capacity;
        if (over) r.count_refusal("image_size");
        return send_error(res, {over ? 413 : 400, decoded.err().message, "messages",
                                over ? "image_too_large" : "invalid_image", 0});
      }
      image = std::move(*decoded);
    } else if (q.camera.empty()) {
      return send_error(res, {400, "the message has no image: add an image_url part (camera://NAME or a data URL)",
                              "messages", "", 0});
    }
    completion_head head{"chatcmpl-" + std::to_string(unix_s()) + "-" + std::to_string(++r.next_id_), unix_s(), model};
    if (q.stream) return stream(std::move(q), std::move(image), head, res);
    ask_controls controls;
    controls.sampling = q.sampling;
    controls.stop = q.stop;
    auto reply = r.service_->ask(q.camera, image ? &*image : nullptr, q.question, controls);
    if (!reply) return send_error(res, from_error(reply.err()));
    count_tokens(r.prompt_tokens_, r.cached_tokens_, r.completion_tokens_, reply->result);
    res.set_content(completion_body(head, reply->result, reply->origin).dump() + "\n", "application/json");
  }

  /// Server-sent events: the status is sent once the first piece (or the
  /// error) is known, so that a refused question still gets its status.
  void stream(chat_request q, std::optional<owned_image> image, const completion_head& head, httplib::Response& res) {
    auto job = std::make_shared<stream_job>();
    // The asker holds the routes (they outlive serving), never this handler object.
    job->asker = std::thread([routes = &r, job, q = std::move(q), image = std::move(image), head] {
      ask_controls controls;
      controls.sampling = q.sampling;
      controls.stop = q.stop;
      controls.on_text = [job, &head](const std::string& piece) {
        job->push(sse(chunk_body(head, {{"content", piece}})));
        return !job->gone.load();
      };
      auto reply = routes->service_->ask(q.camera, image ? &*image : nullptr, q.question, controls);
      if (!reply) return job->finish(from_error(reply.err()));
      count_tokens(routes->prompt_tokens_, routes->cached_tokens_, routes->completion_tokens_, reply->result);
      job->push(sse(chunk_body(head, json::object(), finish_reason(reply->result))));
      if (q.include_usage) job->push(sse(usage_chunk_body(head, reply->result, reply->origin)));
      job->push("data: [DONE]\n\n");
      job->finish(std::nullopt);
    });
    {
      std::unique_lock<std::mutex> lock(job->mutex);
      job->changed.wait(lock, [&] { return !job->events.empty() || job->done; });
      if (job->events.empty() && job->failed) {
        const api_error failed = *job->failed;
        lock.unlock();
        job->join();
        return send_error(res, failed);
      }
    }
    res.set_header("Cache-Control", "no-cache");
    auto role_sent = std::make_shared<bool>(false);
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, head, role_sent](std::size_t, httplib::DataSink& sink) {
          if (!*role_sent) {
            *role_sent = true;
            const std::string role = sse(chunk_body(head, {{"role", "assistant"}, {"content", ""}}));
            if (!sink.write(role.data(), role.size())) return !(job->gone = true);
          }
          std::deque<std::string> events;
          bool done = false;
          std::optional<api_error> failed;
          {
            std::unique_lock<std::mutex> lock(job->mutex);
            job->changed.wait(lock, [&] { return !job->events.empty() || job->done; });
            events.swap(job->events);
            done = job->done;
            failed = job->failed;
          }
          if (done && failed) {  // after pieces went out: the error as an event, then the end
            events.push_back(sse(error_body(*failed)));
            events.push_back("data: [DONE]\n\n");
          }
          for (const auto& e : events)
            if (!sink.write(e.data(), e.size())) return !(job->gone = true);
          if (done) sink.done();
          return true;
        },
        [job](bool) { job->join(); });
  }

  void models(httplib::Response& res) {
    res.set_content(models_body(r.service_->model_id(), unix_s()).dump() + "\n", "application/json");
  }

  void cameras(httplib::Response& res) {
    json data = json::array();
    for (const auto& c : r.cameras_()) {
      json latest = c.seconds_since_frame < 0 ? json()
                                              : json{{"seq", c.seq},
                                                     {"capture_ms", c.capture_ms},
                                                     {"seconds_ago", c.seconds_since_frame}};
      data.push_back({{"name", c.name}, {"url", "camera://" + c.name}, {"state", c.state}, {"latest_frame", latest}});
    }
    res.set_content(json{{"object", "list"}, {"data", data}}.dump() + "\n", "application/json");
  }
};

std::shared_ptr<chat_routes> chat_routes::add(httplib::Server& server, std::shared_ptr<chat_service> service,
                                              cameras_fn cameras, chat_endpoint_options options) {
  std::shared_ptr<chat_routes> r(new chat_routes());
  r->service_ = std::move(service);
  r->cameras_ = std::move(cameras);
  r->options_ = options;
  peer_limits_config clients;
  clients.max_message_bytes = max_body_bytes(options);
  clients.max_per_s = options.requests_per_s;
  clients.burst = options.burst;
  clients.max_streams = 0;
  r->clients_ = peer_limits(clients);
  chat_routes* self = r.get();
  auto counted = [self](const char* path, auto handle) {
    return [self, path, handle](const httplib::Request& req, httplib::Response& res) {
      chat_handlers h{*self};
      if (auto refused = h.admit(req)) send_error(res, *refused);
      else handle(h, req, res);
      self->count_request(path, res.status < 0 ? 200 : res.status);
    };
  };
  server.Post("/v1/chat/completions",
              counted("/v1/chat/completions",
                      [](chat_handlers& h, const httplib::Request& req, httplib::Response& res) { h.completions(req, res); }));
  server.Get("/v1/models",
             counted("/v1/models", [](chat_handlers& h, const httplib::Request&, httplib::Response& res) { h.models(res); }));
  server.Get("/v1/cameras",
             counted("/v1/cameras", [](chat_handlers& h, const httplib::Request&, httplib::Response& res) { h.cameras(res); }));
  return r;
}

std::size_t chat_routes::max_body_bytes(const chat_endpoint_options& options) {
  return options.image.max_bytes / 3 * 4 + 4 + options.limits.max_question_bytes * 2 + (std::size_t{64} << 10);
}

void chat_routes::count_request(const std::string& path, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{path, status}];
}

void chat_routes::count_refusal(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++refused_[reason];
}

std::string chat_routes::metrics_text() const {
  std::string out =
      "# HELP vlcache_api_requests_total Requests to the OpenAI-style API, by path and HTTP status.\n"
      "# TYPE vlcache_api_requests_total counter\n";
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, n] : requests_)
    out += "vlcache_api_requests_total{path=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  out += "# HELP vlcache_api_refused_total API requests refused by a per-client limit, by reason.\n"
         "# TYPE vlcache_api_refused_total counter\n";
  for (const char* reason : {"rate", "body_size", "question_size", "image_size"}) {
    auto it = refused_.find(reason);
    out += std::string("vlcache_api_refused_total{reason=\"") + reason + "\"} " +
           std::to_string(it == refused_.end() ? 0 : it->second) + "\n";
  }
  out += "# HELP vlcache_api_tokens_total Tokens of answered API requests: prompt, cached prompt, completion.\n"
         "# TYPE vlcache_api_tokens_total counter\n"
         "vlcache_api_tokens_total{kind=\"prompt\"} " + std::to_string(prompt_tokens_.load()) + "\n" +
         "vlcache_api_tokens_total{kind=\"cached_prompt\"} " + std::to_string(cached_tokens_.load()) + "\n" +
         "vlcache_api_tokens_total{kind=\"completion\"} " + std::to_string(completion_tokens_.load()) + "\n";
  return out;
}

}  // namespace vlcache::connectors
