// The sink under CAF's deterministic scheduler with a capturing line sink:
// one JSON line per frame and per answer, under the stream's topic; a frame
// is acknowledged once written (that reply frees its credit); an answer
// with a known truth is scored on its line.

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/sink_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

struct capturing_sink : connectors::line_sink {
  std::vector<std::pair<std::string, std::string>> lines;
  void write(const std::string& topic, const std::string& line) override { lines.emplace_back(topic, line); }
  [[nodiscard]] const char* kind() const noexcept override { return "capture"; }
};

TEST(sink, writes_a_line_per_frame_and_answer_and_acknowledges_frames) {
  vlcache::testing::deterministic_system env;
  auto lines = std::make_shared<capturing_sink>();
  auto writer = env.sys.spawn(actors::sink, lines);
  frame_record f;
  f.stream_name = "lobby";
  f.seq = 7;
  f.tokens = 196;
  f.computed = 12;
  bool acknowledged = false;
  env.sys.spawn([&acknowledged, writer, f](caf::event_based_actor* self) {
    self->request(writer, caf::infinite, f).then([&acknowledged]() { acknowledged = true; });
  });
  env.sched.run();
  EXPECT_TRUE(acknowledged);

  answer_record a;
  a.tag = frame_tag{0, "lobby", 7, 0.0};
  a.result.question = "How many red shapes are there?";
  a.result.text = "2";
  a.known = std::make_shared<const scene_question>(scene_question{"count_color", a.result.question, "3"});
  caf::anon_send(writer, a);
  env.sched.run();

  ASSERT_EQ(lines->lines.size(), 2u);
  EXPECT_EQ(lines->lines[0].first, "lobby");
  const auto frame = nlohmann::json::parse(lines->lines[0].second);
  EXPECT_EQ(frame.at("kind"), "frame");
  EXPECT_EQ(frame.at("seq"), 7);
  EXPECT_EQ(frame.at("tokens_computed"), 12);
  const auto answer = nlohmann::json::parse(lines->lines[1].second);
  EXPECT_EQ(answer.at("kind"), "answer");
  EXPECT_EQ(answer.at("text"), "2");
  EXPECT_EQ(answer.at("truth"), "3");
  EXPECT_EQ(answer.at("correct"), false);
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
  env.sched.run();
}

}  // namespace
}  // namespace vlcache::actors
