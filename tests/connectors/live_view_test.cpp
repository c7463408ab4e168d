// The live view's contract with the pipeline: it holds no pixels while
// nobody watches, keeps at most max_view_fps frames per camera per second
// while someone does, and serves what it kept.

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "connectors/answer_json.hpp"
#include "connectors/image_file.hpp"
#include "connectors/live_view.hpp"

namespace vlcache::connectors {
namespace {

constexpr int port = 8941;

view_frame frame(std::uint64_t seq) {
  auto img = std::make_shared<preprocessed_image>();
  img->size = 32;
  img->rgb.assign(32 * 32 * 3, static_cast<std::uint8_t>(seq * 7));
  view_frame f;
  f.stream = "gate";
  f.seq = seq;
  f.grid_side = 4;
  f.computed = 2;
  f.positions = std::make_shared<const std::vector<int>>(std::vector<int>{1, 6});
  f.image = img;
  return f;
}

TEST(live_view, keeps_frames_only_while_watched_and_at_most_its_rate) {
  live_view_options o;
  o.port = port;
  o.max_view_fps = 2.0;
  auto view = live_view::start(o, "test", [] { return std::string("vlcache_up 1\n"); },
                               [] { return nlohmann::json{{"gate", {{"read", 5}}}}; });
  ASSERT_TRUE(view) << view.err().message;
  for (std::uint64_t i = 0; i < 50; ++i) (*view)->offer_frame(frame(i));
  EXPECT_EQ((*view)->frames_kept(), 0u);  // nobody has asked yet

  httplib::Client http("127.0.0.1", port);
  EXPECT_EQ(http.Get("/frame/gate.jpg")->status, 404);  // nothing kept, and now someone watches
  auto state = http.Get("/api/state");
  ASSERT_TRUE(state);
  auto j = nlohmann::json::parse(state->body);
  EXPECT_EQ(j["streams"][0]["name"], "gate");
  EXPECT_EQ(j["streams"][0]["seq"], 49);
  EXPECT_EQ(j["streams"][0]["counters"]["read"], 5);
  EXPECT_NEAR(j["streams"][0]["computed_share"].get<double>(), 2.0 / 16, 1e-9);
  for (std::uint64_t i = 50; i < 150; ++i) (*view)->offer_frame(frame(i));  // well within half a second
  EXPECT_EQ((*view)->frames_kept(), 1u);
  auto jpeg = http.Get("/frame/gate.jpg");
  ASSERT_TRUE(jpeg);
  EXPECT_EQ(jpeg->status, 200);
  ASSERT_GT(jpeg->body.size(), 3u);
  EXPECT_EQ(static_cast<unsigned char>(jpeg->body[0]), 0xFF);
  EXPECT_EQ(static_cast<unsigned char>(jpeg->body[1]), 0xD8);
  EXPECT_EQ(http.Get("/frame/nobody.jpg")->status, 404);
  EXPECT_EQ(http.Get("/metrics")->body, "vlcache_up 1\n");
  EXPECT_EQ(http.Get("/healthz")->body, "ok\n");
  EXPECT_NE(http.Get("/")->body.find("/api/state"), std::string::npos);

  // Answers arrive as sink lines; frame lines are ignored.
  (*view)->write("gate", R"({"kind":"frame","seq":1})");
  (*view)->write("gate", R"({"kind":"answer","seq":3,"text":"two people"})");
  j = nlohmann::json::parse(http.Get("/api/state")->body);
  ASSERT_EQ(j["streams"][0]["answers"].size(), 1u);
  EXPECT_EQ(j["streams"][0]["answers"][0]["text"], "two people");
  // The counter counts what the view lists, even with the answerer too busy to answer the probe.
  for (int i = 0; i < 7; ++i) (*view)->write("gate", R"({"kind":"answer","seq":4,"text":"three"})");
  j = nlohmann::json::parse(http.Get("/api/state")->body);
  EXPECT_EQ(j["streams"][0]["answered"], 8);
  EXPECT_EQ(j["streams"][0]["answers"].size(), 5u) << "answers_kept";
  (*view)->stop();
}

TEST(answer_json, lines_are_ascii_and_survive_bytes_that_are_not_utf8) {
  answer a;
  a.question = "Wer?";
  a.text = "caf\xc3\xa9 \xef\xbf\xbd";  // "café" and the replacement sentencepiece puts for a broken byte piece
  auto j = answer_to_json(a);
  j["stream"] = std::string("cam\xff");  // not UTF-8: a stream name off the network
  const auto line = to_json_line(j);
  for (unsigned char c : line) EXPECT_LT(c, 0x80) << line;
  EXPECT_NE(line.find("caf\\u00e9 \\ufffd"), std::string::npos) << line;
  EXPECT_NE(line.find("\"cam\\ufffd\""), std::string::npos) << line;
  EXPECT_EQ(nlohmann::json::parse(line)["text"], a.text) << "the page shows the same text";
}

TEST(live_view, a_busy_port_is_named) {
  live_view_options o;
  o.port = port + 1;
  auto first = live_view::start(o, "a", nullptr, nullptr);
  ASSERT_TRUE(first);
  auto second = live_view::start(o, "b", nullptr, nullptr);
  ASSERT_FALSE(second);
  EXPECT_NE(second.err().message.find(std::to_string(port + 1)), std::string::npos);
}

TEST(live_view, a_token_guards_every_path_but_healthz) {
  live_view_options o;
  o.port = port + 2;
  o.token = "0123456789abcdef0123";
  auto view = live_view::start(o, "t", [] { return std::string("vlcache_up 1\n"); }, nullptr);
  ASSERT_TRUE(view) << view.err().message;
  httplib::Client http("127.0.0.1", o.port);
  EXPECT_EQ(http.Get("/healthz")->status, 200);
  for (const char* path : {"/", "/metrics", "/api/state", "/frame/x.jpg"}) EXPECT_EQ(http.Get(path)->status, 401) << path;
  EXPECT_EQ(http.Get("/metrics", {{"Authorization", "Bearer 0123456789abcdef012"}})->status, 401) << "one short";
  EXPECT_EQ(http.Get("/metrics", {{"Authorization", "Bearer 0123456789abcdef0124"}})->status, 401) << "one wrong";
  auto ok = http.Get("/metrics", {{"Authorization", "Bearer 0123456789abcdef0123"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_NE(ok->body.find("vlcache_http_unauthorized_total 6"), std::string::npos) << ok->body;
  EXPECT_EQ(http.Get("/?token=0123456789abcdef0123")->status, 200);
  EXPECT_EQ((*view)->unauthorized(), 6u);
}

TEST(live_view, recomputed_patches_are_outlined_and_keep_their_colours) {
  live_view_options o;
  o.port = port + 4;
  auto view = live_view::start(o, "t", nullptr, nullptr);
  ASSERT_TRUE(view) << view.err().message;
  httplib::Client http("127.0.0.1", o.port);
  ASSERT_TRUE(http.Get("/api/state"));  // someone watches
  auto f = frame(1);
  auto green = std::make_shared<preprocessed_image>();
  green->size = 64;
  for (int i = 0; i < 64 * 64; ++i) green->rgb.insert(green->rgb.end(), {0, 200, 0});
  f.image = green;
  f.full = true;  // every patch recomputed: every one marked
  (*view)->offer_frame(f);
  auto jpeg = http.Get("/frame/gate.jpg");
  ASSERT_TRUE(jpeg);
  ASSERT_EQ(jpeg->status, 200);
  const auto path = std::filesystem::temp_directory_path() / "vlcache_outline_test.jpg";
  std::ofstream(path, std::ios::binary) << jpeg->body;
  auto img = read_image(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(img) << img.err().message;
  ASSERT_EQ(img->width, 128);  // shown at twice its size
  // The middle of a patch (4x4 grid: cells of 32 px) keeps its green.
  const auto at = [&](int x, int y, int c) { return img->bgr[(static_cast<std::size_t>(y) * img->width + x) * 3 + c]; };
  EXPECT_NEAR(at(16, 16, 1), 200, 12) << "green";
  EXPECT_LT(at(16, 16, 2), 30) << "no red tint";
  EXPECT_LT(at(16, 16, 0), 30);
  // Its border is marked, in white.
  EXPECT_GT(at(16, 0, 2), 200);
  EXPECT_GT(at(16, 0, 0), 200);
}

TEST(live_view, an_ended_run_says_so_and_its_clock_stops) {
  live_view_options o;
  o.port = port + 5;
  auto view = live_view::start(o, "t", nullptr, nullptr);
  ASSERT_TRUE(view) << view.err().message;
  httplib::Client http("127.0.0.1", o.port);
  auto j = nlohmann::json::parse(http.Get("/api/state")->body);
  EXPECT_FALSE(j["ended"].get<bool>());
  (*view)->mark_ended();
  j = nlohmann::json::parse(http.Get("/api/state")->body);
  EXPECT_TRUE(j["ended"].get<bool>());
  const double first = j["uptime_s"];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(nlohmann::json::parse(http.Get("/api/state")->body)["uptime_s"].get<double>(), first);
}

/// A loopback TCP connection to `port`, or -1.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(live_view, healthz_answers_beside_200_idle_connections_and_a_huge_body_is_refused_unread) {
  live_view_options o;
  o.port = port + 6;
  auto view = live_view::start(o, "t", nullptr, nullptr);
  ASSERT_TRUE(view) << view.err().message;
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = connect_to(o.port);
    ASSERT_GE(fd, 0) << "connection " << i;
    idle.push_back(fd);  // connected, and silent
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted, each holding a worker
  httplib::Client http("127.0.0.1", o.port);
  http.set_connection_timeout(2, 0);
  http.set_read_timeout(2, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health) << "no answer beside 200 idle connections";
  EXPECT_EQ(health->body, "ok\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // A 1 GiB body announced: refused from its Content-Length, nothing read.
  const int fd = connect_to(o.port);
  ASSERT_GE(fd, 0);
  const std::string head = "POST /api/state HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n";
  ASSERT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  char reply[64] = {};
  const auto n = ::read(fd, reply, sizeof reply - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(reply).rfind("HTTP/1.1 413", 0), 0u) << reply;
  ::close(fd);
  for (int f : idle) ::close(f);
}

TEST(live_view, a_bad_certificate_is_named) {
  live_view_options o;
  o.port = port + 3;
  o.tls_cert = "/nonexistent/cert.pem";
  o.tls_key = "/nonexistent/key.pem";
  auto view = live_view::start(o, "t", nullptr, nullptr);
  ASSERT_FALSE(view);
  EXPECT_NE(view.err().message.find("/nonexistent/cert.pem"), std::string::npos) << view.err().message;
}

}  // namespace
}  // namespace vlcache::connectors
