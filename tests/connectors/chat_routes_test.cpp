// The OpenAI-style API over real HTTP on the live view's server, with a
// stand-in pipeline: answers plain and streamed (server-sent events in
// OpenAI's order), each failure with its status and OpenAI's error shape,
// the token, the per-client rate, and the counts in /metrics.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "connectors/live_view.hpp"

namespace vlcache::connectors {
namespace {

using nlohmann::json;

/// A pipeline that answers by the question's text.
struct scripted_service : chat_service {
  std::string model = "tiny-llava-scenes";
  std::string model_id() const override { return model; }
  std::vector<std::string> camera_names() const override { return {"gate", "yard"}; }
  expected<chat_reply> ask(const std::string& camera, const owned_image* image, const std::string& question,
                           const ask_controls& controls) override {
    if (question == "busy?") return error{errc::busy, "the answerer has 16 questions waiting; ask again later"};
    if (camera == "nowhere") return error{errc::not_found, "no frame of stream 'nowhere' yet (2 streams have frames)"};
    chat_reply r;
    r.result.text = "two";
    r.result.ids = {7, 8, 2};
    r.result.stopped_on_eos = true;
    r.result.prompt_tokens = 120;
    r.result.rows_computed = 20;
    r.origin = {camera, 12, 1200.0, 0.1};
    if (image) r.result.text = std::to_string(image->width) + "x" + std::to_string(image->height);
    if (controls.on_text)
      for (const char* piece : {"tw", "o"})
        if (!controls.on_text(piece)) break;
    return r;
  }
};

struct api_env {
  explicit api_env(std::string token = "", double per_s = 100, std::string model = "tiny-llava-scenes",
                   double burst = 100) {
    service->model = std::move(model);
    live_view_options o;
    o.port = 0;
    o.token = std::move(token);
    o.chat = service;
    o.chat_options.requests_per_s = per_s;
    o.chat_options.burst = burst;
    o.chat_options.limits.max_question_bytes = 100;
    auto started = live_view::start(o, "test", [] { return std::string(); }, [] { return json::object(); });
    if (!started) throw std::runtime_error(started.err().message);
    view = std::move(*started);
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", view->port());
    c.set_read_timeout(10, 0);
    return c;
  }
  std::shared_ptr<scripted_service> service = std::make_shared<scripted_service>();
  std::unique_ptr<live_view> view;
};

json question(const std::string& text, const std::string& url = "camera://gate") {
  return json{{"model", "tiny-llava-scenes"},
              {"messages",
               json::array({{{"role", "user"},
                             {"content", json::array({{{"type", "text"}, {"text", text}},
                                                      {{"type", "image_url"}, {"image_url", {{"url", url}}}}})}}})}};
}

httplib::Result post(httplib::Client& c, const json& body) {
  return c.Post("/v1/chat/completions", body.dump(), "application/json");
}

TEST(chat_routes, answers_a_camera_question_with_usage) {
  api_env env;
  auto c = env.client();
  auto r = post(c, question("How many?"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "two");
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 100);
  EXPECT_EQ(j["vlcache"]["camera"], "gate");
  EXPECT_EQ(j["model"], "tiny-llava-scenes");
}

TEST(chat_routes, streams_a_chunk_per_piece_then_done) {
  api_env env;
  auto c = env.client();
  auto body = question("How many?");
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = post(c, body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<std::string> events;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("data: ", 0) == 0) events.push_back(line.substr(6));
  ASSERT_EQ(events.size(), 6u) << r->body;  // role, "tw", "o", finish, usage, [DONE]
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(json::parse(events[1])["choices"][0]["delta"]["content"], "tw");
  EXPECT_EQ(json::parse(events[2])["choices"][0]["delta"]["content"], "o");
  EXPECT_EQ(json::parse(events[3])["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(json::parse(events[4])["usage"]["completion_tokens"], 3);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST(chat_routes, each_failure_has_its_status_and_openai_shape) {
  api_env env;
  auto c = env.client();
  auto status_of = [&](const json& body, int want, const std::string& code) {
    auto r = post(c, body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, want) << body.dump() << " -> " << r->body;
    const auto j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_TRUE(j["error"].contains("message") && j["error"].contains("type") && j["error"].contains("param"));
    if (!code.empty()) {
      EXPECT_EQ(j["error"]["code"], code) << r->body;
    }
  };
  status_of(question("q", "camera://nowhere"), 404, "camera_not_found");
  status_of(question("q", "data:image/png;base64,bm90IGEgcG5n"), 400, "invalid_image");
  status_of(question(std::string(200, 'a')), 413, "question_too_long");
  auto other_model = question("q");
  other_model["model"] = "gpt-4o";
  status_of(other_model, 404, "model_not_found");
  auto r = post(c, question("busy?"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  auto streamed = question("busy?");
  streamed["stream"] = true;
  status_of(streamed, 429, "busy");  // refused before any piece: a status, not an event
  // The 404 names the camera asked for and no other.
  auto missing = post(c, question("q", "camera://nowhere"));
  EXPECT_NE(missing->body.find("nowhere"), std::string::npos);
  EXPECT_EQ(missing->body.find("gate"), std::string::npos);
}

TEST(chat_routes, a_pipeline_without_a_language_model_is_409) {
  api_env env("", 100, "");
  auto c = env.client();
  auto r = post(c, question("q"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_TRUE(json::parse(models->body)["data"].empty());
}

TEST(chat_routes, the_token_guards_the_api_in_openai_shape) {
  api_env env("a-token-of-16-characters");
  auto c = env.client();
  auto r = post(c, question("q"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  c.set_bearer_token_auth("a-token-of-16-characters");
  auto ok = post(c, question("q"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(chat_routes, a_client_over_its_rate_gets_429_and_it_is_counted) {
  api_env env("", 0.01, "tiny-llava-scenes", 1);  // one request, then one per 100 s
  auto c = env.client();
  auto first = post(c, question("q"));
  auto second = post(c, question("q"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(second->status, 429);
  EXPECT_EQ(json::parse(second->body)["error"]["code"], "rate_limit_exceeded");
  EXPECT_FALSE(second->get_header_value("Retry-After").empty());
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("vlcache_api_refused_total{reason=\"rate\"} 1"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("vlcache_api_requests_total{path=\"/v1/chat/completions\",status=\"200\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("vlcache_api_requests_total{path=\"/v1/chat/completions\",status=\"429\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("vlcache_api_tokens_total{kind=\"cached_prompt\"} 100"), std::string::npos);
}

TEST(chat_routes, cameras_list_the_configured_and_their_latest_frame) {
  api_env env;
  view_frame f;
  f.stream = "gate";
  f.seq = 9;
  f.capture_ms = 900;
  f.grid_side = 4;
  env.view->offer_frame(f);
  auto c = env.client();
  auto r = c.Get("/v1/cameras");
  ASSERT_TRUE(r);
  const auto j = json::parse(r->body);
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][0]["name"], "gate");
  EXPECT_EQ(j["data"][0]["state"], "live");
  EXPECT_EQ(j["data"][0]["latest_frame"]["seq"], 9);
  EXPECT_EQ(j["data"][0]["url"], "camera://gate");
  EXPECT_EQ(j["data"][1]["name"], "yard");
  EXPECT_EQ(j["data"][1]["state"], "waiting");
  EXPECT_TRUE(j["data"][1]["latest_frame"].is_null());
}


/// Streams pieces until its listener says stop, then says how far it got.
struct endless_service : scripted_service {
  std::atomic<int> pieces{0};
  std::atomic<bool> stopped{false};
  expected<chat_reply> ask(const std::string&, const owned_image*, const std::string&,
                           const ask_controls& controls) override {
    for (int i = 0; i < 100000 && controls.on_text; ++i) {
      ++pieces;
      if (!controls.on_text("x")) {
        stopped = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    chat_reply r;
    r.result.text = "x";
    r.result.cancelled = stopped;
    return r;
  }
};

TEST(chat_routes, a_client_that_leaves_mid_stream_stops_the_answer) {
  auto service = std::make_shared<endless_service>();
  live_view_options o;
  o.port = 0;
  o.chat = service;
  auto view = live_view::start(o, "test", [] { return std::string(); }, [] { return json::object(); });
  ASSERT_TRUE(view) << view.err().message;
  {
    httplib::Client c("127.0.0.1", (*view)->port());
    auto body = question("go on");
    body["stream"] = true;
    std::string seen;
    // Reading a few events, then hanging up.
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
      seen.append(data, n);
      return seen.size() < 2000;
    };
    (void)c.send(req);
    EXPECT_GE(seen.size(), 2000u);
  }
  for (int i = 0; i < 500 && !service->stopped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(service->stopped) << "the answer went on after its client left";
  EXPECT_LT(service->pieces.load(), 100000);
  (*view)->stop();
}

}  // namespace
}  // namespace vlcache::connectors
