// Random input at the two text endpoints a peer can reach: the request
// endpoint's JSON and the live view's HTTP paths and headers. Whatever
// arrives, the server answers (an error naming what was wrong, or 401/404)
// and keeps serving; the counts add up.

#include <gtest/gtest.h>
#include <httplib.h>
#include <zmq.hpp>

#include <nlohmann/json.hpp>
#include <random>

#include "support/free_port.hpp"
#include "connectors/live_view.hpp"
#include "connectors/request_endpoint.hpp"

namespace vlcache::connectors {
namespace {

using test::free_port;

/// Random bytes, random JSON-looking text, or a valid request mutated.
std::string random_request(std::mt19937& rng) {
  static const std::vector<std::string> seeds = {
      R"({"stream":"cam","question":"What is there?"})", R"({"stream":1,"question":"x"})",
      R"({"question":""})", R"([1,2,3])", R"({"stream":"cam","question":"q","extra":{"a":[null,true]}})", "null", ""};
  std::uniform_int_distribution<int> kind(0, 2), byte(0, 255), len(0, 300);
  std::string s;
  switch (kind(rng)) {
    case 0:
      for (int i = len(rng); i > 0; --i) s.push_back(static_cast<char>(byte(rng)));
      break;
    case 1: {
      static const std::string alphabet = "{}[]\":,0123456789.eE+-tfnrulsaq \\\xc3\xa9\xff";
      std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
      for (int i = len(rng); i > 0; --i) s.push_back(alphabet[pick(rng)]);
      break;
    }
    default: {
      s = seeds[std::uniform_int_distribution<std::size_t>(0, seeds.size() - 1)(rng)];
      for (int flips = std::uniform_int_distribution<int>(0, 4)(rng); flips > 0 && !s.empty(); --flips)
        s[std::uniform_int_distribution<std::size_t>(0, s.size() - 1)(rng)] = static_cast<char>(byte(rng));
    }
  }
  return s;
}

TEST(fuzz, the_request_endpoint_answers_every_message_and_goes_on) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto server = request_server::start(endpoint, [](const std::string& stream, const std::string& q) {
    return nlohmann::json{{"stream", stream}, {"question", q}}.dump();
  });
  ASSERT_TRUE(server) << server.err().message;
  zmq::context_t ctx;
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 5000);
  req.connect(endpoint);
  std::mt19937 rng(2026);
  const int n = 600;
  for (int i = 0; i < n; ++i) {
    const std::string body = random_request(rng);
    req.send(zmq::buffer(body), zmq::send_flags::none);
    zmq::message_t reply;
    ASSERT_TRUE(req.recv(reply)) << "no reply to message " << i;
    const auto j = nlohmann::json::parse(reply.to_string(), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "the reply is not JSON: " << reply.to_string();
    ASSERT_TRUE(j.is_object());
    EXPECT_TRUE(j.contains("error") || (j.contains("stream") && j.contains("question"))) << j.dump();
  }
  EXPECT_EQ((*server)->served() + (*server)->rejected(), static_cast<std::uint64_t>(n));
  EXPECT_GT((*server)->rejected(), 0u);
}

TEST(request_endpoint, a_message_far_over_the_limit_is_dropped_unread_and_the_endpoint_goes_on) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto server = request_server::start(endpoint, [](const std::string&, const std::string&) { return std::string("{}"); },
                                      std::nullopt, 100);
  ASSERT_TRUE(server);
  {
    zmq::context_t ctx;
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.set(zmq::sockopt::rcvtimeo, 1000);
    req.connect(endpoint);
    const std::string huge(64u << 20, 'x');  // 64 MiB: libzmq drops the connection, nothing allocated
    req.send(zmq::buffer(huge), zmq::send_flags::none);
    zmq::message_t reply;
    EXPECT_FALSE(req.recv(reply)) << "a 64 MiB request was answered";
  }
  EXPECT_EQ((*server)->served() + (*server)->rejected(), 0u) << "it never reached the handler";
  auto ok = ask_endpoint(endpoint, "cam", "still there?", 10);
  ASSERT_TRUE(ok) << ok.err().message;
  EXPECT_EQ(*ok, "{}");
}

TEST(request_endpoint, a_question_over_the_limit_is_refused) {
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto server = request_server::start(endpoint, [](const std::string&, const std::string&) { return std::string("{}"); },
                                      std::nullopt, 10);
  ASSERT_TRUE(server);
  auto ok = ask_endpoint(endpoint, "cam", "ten bytes!", 10);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "{}");
  auto long_one = ask_endpoint(endpoint, "cam", "eleven byte", 10);
  ASSERT_TRUE(long_one);
  EXPECT_NE(long_one->find("longer than 10 bytes"), std::string::npos) << *long_one;
  EXPECT_EQ((*server)->rejected(), 1u);
}

TEST(fuzz, the_live_view_answers_random_paths_and_headers_and_goes_on) {
  live_view_options o;
  o.port = free_port();
  o.token = "fuzz-token-0123456789";
  auto view = live_view::start(o, "fuzz", [] { return std::string("vlcache_up 1\n"); }, [] { return nlohmann::json::object(); });
  ASSERT_TRUE(view) << view.err().message;
  httplib::Client http("127.0.0.1", o.port);
  http.set_read_timeout(5, 0);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(33, 126), len(0, 80), coin(0, 3);
  static const std::vector<std::string> roots = {"/", "/metrics", "/api/state", "/frame/", "/healthz", "/frame/a.jpg"};
  int answered = 0;
  for (int i = 0; i < 400; ++i) {
    std::string path = roots[static_cast<std::size_t>(i) % roots.size()];
    for (int k = len(rng); k > 0; --k) {
      const char c = static_cast<char>(byte(rng));
      if (c != '#' && c != '?' && c != '%') path.push_back(c);  // keep it one path
    }
    httplib::Headers headers;
    if (coin(rng) == 0) headers.emplace("Authorization", "Bearer " + o.token);
    else if (coin(rng) == 1) headers.emplace("Authorization", std::string(static_cast<std::size_t>(len(rng)), 'x'));
    auto res = http.Get(path, headers);
    if (!res) continue;  // the client refused to send a path it cannot encode
    ++answered;
    EXPECT_TRUE(res->status == 200 || res->status == 400 || res->status == 401 || res->status == 404) << path;
    if (res->status == 200 && path.rfind("/healthz", 0) != 0) EXPECT_FALSE(headers.empty()) << path;
  }
  EXPECT_GT(answered, 300);
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << "still serving";
}

}  // namespace
}  // namespace vlcache::connectors
