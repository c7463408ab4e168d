// The console's readable lines: what a person sees of answers and frames.

#include <gtest/gtest.h>

#include "connectors/readable_line.hpp"

namespace vlcache::connectors {
namespace {

TEST(readable_line, an_answer_with_truth_reads_as_one_line) {
  const auto j = nlohmann::json::parse(
      R"({"kind":"answer","stream":"gate","seq":140,"question":"How many yellow shapes?","text":"0",
          "truth":"0","correct":true,"on_demand":false})");
  EXPECT_EQ(readable_line(j), "gate #140 How many yellow shapes? -> 0 (truth 0, right)");
}

TEST(readable_line, a_wrong_answer_an_asked_one_and_random_weights_say_so) {
  auto j = nlohmann::json::parse(R"({"kind":"answer","stream":"hall","seq":7,"question":"Is any shape moving?",
                                     "text":"no","truth":"yes","correct":false,"on_demand":true})");
  EXPECT_EQ(readable_line(j), "hall #7 (asked) Is any shape moving? -> no (truth yes, WRONG)");
  j = nlohmann::json::parse(R"({"kind":"answer","stream":"a","seq":1,"question":"q","text":"t","random_weights":true})");
  EXPECT_EQ(readable_line(j), "a #1 q -> t  [random weights: not an answer]");
}

TEST(readable_line, a_frame_reads_as_tokens_computed_and_time_and_other_kinds_as_nothing) {
  const auto j = nlohmann::json::parse(R"({"kind":"frame","stream":"gate","seq":3,"tokens":100,"tokens_computed":12,
                                           "latency_ms":{"total":21.34}})");
  EXPECT_EQ(readable_line(j), "gate #3 frame: 12 of 100 tokens computed, 21.3 ms");
  EXPECT_EQ(readable_line(nlohmann::json::parse(R"({"kind":"other"})")), "");
}

}  // namespace
}  // namespace vlcache::connectors
