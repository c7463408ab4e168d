// Asking a scene: the pipeline's one question per answered frame must reach
// every kind even when answered frames are every n-th, and scoring must not
// fail an answer over white space.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/scenes/scene_questions.hpp"

namespace vlcache {
namespace {

std::vector<scene_question> frame_questions() {
  return {{"count_color", "How many red shapes are there?", "1"},
          {"count_color", "How many blue shapes are there?", "0"},
          {"presence", "Is there a red circle?", "yes"},
          {"moving", "Is any shape moving?", "no"},
          {"position", "Where is the red circle?", "top left"},
          {"color_of", "What color is the circle?", "red"}};
}

TEST(scene_questions, every_n_th_frame_still_reaches_every_kind_and_question) {
  const auto all = frame_questions();
  for (std::uint64_t n : {1, 5, 10, 30}) {
    std::set<std::string> kinds, questions;
    for (std::uint64_t frame = 0; frame < 200 * n; frame += n) {
      auto q = question_for(all, frame);
      ASSERT_TRUE(q);
      kinds.insert(q->kind);
      questions.insert(q->question);
    }
    EXPECT_EQ(kinds.size(), 5u) << "every " << n << " frames";
    EXPECT_EQ(questions.size(), all.size()) << "every " << n << " frames";
  }
}

TEST(scene_questions, the_choice_is_a_function_of_the_frame) {
  const auto all = frame_questions();
  for (std::uint64_t frame : {0u, 7u, 123u}) EXPECT_EQ(question_for(all, frame)->question, question_for(all, frame)->question);
  EXPECT_FALSE(question_for({}, 3));
}

TEST(scene_questions, pick_questions_asks_each_kind_once) {
  const auto picked = pick_questions(frame_questions(), 1);
  std::map<std::string, int> per_kind;
  for (const auto& q : picked) ++per_kind[q.kind];
  EXPECT_EQ(per_kind.size(), 5u);
  for (const auto& [kind, n] : per_kind) EXPECT_EQ(n, 1) << kind;
}

TEST(scene_questions, pick_questions_every_n_th_frame_still_asks_every_question_of_a_kind) {
  // As a scene frame has them: four colours to count, twelve shapes to look for.
  std::vector<scene_question> all;
  for (const char* color : {"red", "green", "blue", "yellow"}) {
    all.push_back({"count_color", std::string("How many ") + color + " shapes are there?", "0"});
    for (const char* shape : {"circle", "square", "triangle"})
      all.push_back({"presence", std::string("Is there a ") + color + " " + shape + "?", "no"});
  }
  for (std::uint64_t n : {1, 2, 4, 10, 12, 30}) {
    std::set<std::string> asked;
    for (std::uint64_t frame = 0; frame < 200 * n; frame += n)
      for (const auto& q : pick_questions(all, frame)) asked.insert(q.question);
    EXPECT_EQ(asked.size(), all.size()) << "every " << n << " frames";
  }
}

TEST(scene_questions, answers_match_the_truth_up_to_surrounding_white_space_only) {
  EXPECT_TRUE(answer_matches(" yes", "yes"));
  EXPECT_TRUE(answer_matches("top left\n", "top left"));
  EXPECT_FALSE(answer_matches("top  left", "top left"));
  EXPECT_FALSE(answer_matches("Yes", "yes"));
  EXPECT_FALSE(answer_matches("", "0"));
  EXPECT_FALSE(answer_matches("10", "1"));
}

}  // namespace
}  // namespace vlcache
