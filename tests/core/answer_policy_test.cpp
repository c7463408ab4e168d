#include <gtest/gtest.h>

#include "core/cache/answer_policy.hpp"

namespace vlcache {
namespace {

TEST(answer_policy, every_n_frames_counts_per_stream) {
  answer_policy p({3, 0.0, true});
  std::vector<bool> a, b;
  for (int i = 0; i < 7; ++i) a.push_back(p.due(1, 0.0));
  for (int i = 0; i < 4; ++i) b.push_back(p.due(2, 0.0));
  EXPECT_EQ(a, (std::vector<bool>{true, false, false, true, false, false, true}));
  EXPECT_EQ(b, (std::vector<bool>{true, false, false, true}));
}

TEST(answer_policy, change_threshold_answers_big_changes_and_restarts_the_count) {
  answer_policy p({4, 0.25, false});
  EXPECT_FALSE(p.due(1, 1.0 / 8));
  EXPECT_TRUE(p.due(1, 0.3));   // a big change
  EXPECT_FALSE(p.due(1, 0.1));
  EXPECT_FALSE(p.due(1, 0.1));
  EXPECT_FALSE(p.due(1, 0.1));
  EXPECT_TRUE(p.due(1, 0.1));   // fourth frame since the last answer
}

TEST(answer_policy, off_means_never_and_bad_values_are_named) {
  answer_policy p({0, 0.0, false});
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(p.due(1, 1.0));
  EXPECT_FALSE((answer_policy_config{-1, 0.0, true}.validate()));
  auto st = answer_policy_config{0, 1.5, true}.validate();
  ASSERT_FALSE(st);
  EXPECT_NE(st.err().message.find("change_threshold"), std::string::npos);
}

}  // namespace
}  // namespace vlcache
