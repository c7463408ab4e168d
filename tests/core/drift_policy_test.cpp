// Drift control: refresh interval, token age, change budget and top-r.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/cache/drift_policy.hpp"

namespace vlcache {
namespace {

constexpr int n = 10;

gate_decision decision(std::vector<int> misses, std::vector<float> scores = {}) {
  gate_decision d;
  d.miss.assign(n, 0);
  d.score.assign(n, 0.5f);
  for (std::size_t i = 0; i < misses.size(); ++i) {
    d.miss[misses[i]] = 1;
    d.score[misses[i]] = scores.empty() ? 2.0f : scores[i];
    d.miss_positions.push_back(misses[i]);
  }
  return d;
}

compute_plan step(drift_controller& c, const gate_decision& d) {
  auto p = c.plan(0, d);
  EXPECT_TRUE(p);
  c.commit(0, *p);
  return *p;
}

TEST(drift_policy, first_frame_is_full_then_only_misses) {
  auto c = *drift_controller::make(n, {});
  EXPECT_TRUE(step(c, decision({})).full);
  auto p = step(c, decision({3, 7}));
  EXPECT_FALSE(p.full);
  EXPECT_EQ(p.positions, (std::vector<int>{3, 7}));
  EXPECT_TRUE(step(c, decision({})).positions.empty());
}

TEST(drift_policy, refreshes_every_interval) {
  drift_config cfg;
  cfg.refresh_interval = 3;
  auto c = *drift_controller::make(n, cfg);
  std::vector<bool> full;
  for (int f = 0; f < 8; ++f) full.push_back(step(c, decision({})).full);
  EXPECT_EQ(full, (std::vector<bool>{true, false, false, true, false, false, true, false}));
}

TEST(drift_policy, recomputes_tokens_that_reach_the_maximum_age) {
  drift_config cfg;
  cfg.max_token_age = 3;
  auto c = *drift_controller::make(n, cfg);
  step(c, decision({}));         // frame 1: all computed
  step(c, decision({0}));        // frame 2
  step(c, decision({}));         // frame 3
  auto p = step(c, decision({}));  // ages: 0 -> 2, others 3
  EXPECT_EQ(p.from_age, 9);
  EXPECT_EQ(p.positions.size(), 9u);
  EXPECT_EQ(std::count(p.positions.begin(), p.positions.end(), 0), 0);
}

TEST(drift_policy, recomputes_tokens_once_enough_of_the_frame_changed) {
  drift_config cfg;
  cfg.changed_share_budget = 0.25;  // 30 % recomputed around it triggers a refresh of it
  auto c = *drift_controller::make(n, cfg);
  step(c, decision({}));
  step(c, decision({0, 1}));     // others: 0.2
  auto p = step(c, decision({2}));  // others: 0.2 + 0.1 = 0.3 > 0.25 only after this frame
  EXPECT_EQ(p.from_drift, 0);
  p = step(c, decision({}));
  // Positions 3..9 saw 0.3; 0,1 saw 0.1; 2 saw 0.
  EXPECT_EQ(p.positions, (std::vector<int>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(p.from_drift, 7);
}

TEST(drift_policy, top_r_budget_keeps_the_largest_changes) {
  drift_config cfg;
  cfg.max_tokens_per_frame = 2;
  auto c = *drift_controller::make(n, cfg);
  step(c, decision({}));
  auto p = step(c, decision({1, 4, 6, 8}, {1.5f, 9.0f, 3.0f, 1.1f}));
  EXPECT_EQ(p.positions, (std::vector<int>{4, 6}));
  EXPECT_EQ(p.deferred, 2);
}

TEST(drift_policy, rejects_mismatched_decisions_and_bad_config) {
  auto c = *drift_controller::make(n, {});
  gate_decision d;
  d.miss.assign(5, 0);
  d.score.assign(5, 0);
  EXPECT_FALSE(c.plan(0, d));
  drift_config bad;
  bad.max_token_age = -1;
  EXPECT_FALSE(drift_controller::make(n, bad));
}

TEST(reference_gate_score, is_the_largest_distance_over_threshold) {
  gate_thresholds t;
  t.mad = 4.0f;
  auto gate = *reference_gate::make(*patch_grid::make(16, 8), t);
  std::vector<std::uint8_t> a(16 * 16 * 3, 100), b = a;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x)
      for (int ch = 0; ch < 3; ++ch) b[(y * 16 + x) * 3 + ch] = 110;  // patch 0: +10
  auto engine = *signature_engine::make(*patch_grid::make(16, 8));
  auto sa = *engine.compute(image_view{a.data(), 16, 16, 3, 1, 0, channel_order::rgb});
  auto sb = *engine.compute(image_view{b.data(), 16, 16, 3, 1, 0, channel_order::rgb});
  auto d0 = *gate.decide(0, sa);
  EXPECT_TRUE(std::isinf(d0.score[0]));
  ASSERT_TRUE(gate.commit(0, sa, d0.miss_positions, 0));
  auto d1 = *gate.decide(0, sb);
  EXPECT_FLOAT_EQ(d1.score[0], 2.5f);
  EXPECT_FLOAT_EQ(d1.score[1], 0.0f);
  EXPECT_EQ(d1.miss_positions, std::vector<int>{0});
}

}  // namespace
}  // namespace vlcache
