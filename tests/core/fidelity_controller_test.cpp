// The per-camera fidelity controller against a simulated sensor: each rung
// of the ladder has a true error (1 - cosine at the low percentile), and a
// check returns token cosines whose low percentile is that error with noise.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cache/fidelity_controller.hpp"

namespace vlcache {
namespace {

/// A check's token cosines: 196 tokens, all but a few near 1, the low tail
/// at 1 - error (with 10 % noise on the error).
std::vector<float> simulated_check(double error, std::mt19937& rng) {
  std::normal_distribution<double> noise(1.0, 0.1);
  std::vector<float> tokens(196, static_cast<float>(1.0 - error / 10));
  for (int i = 0; i < 6; ++i) tokens[static_cast<std::size_t>(i * 30)] = static_cast<float>(1.0 - error * noise(rng));
  return tokens;
}

controller_config config_at(int start) {
  controller_config c;
  c.target.cosine = 0.999;  // error allowed: 1e-3
  c.ladder = {0.4, 0.2, 0.1, 0.05, 0.02};
  c.start = start;
  return c;
}

/// Runs `checks` checks with per-rung errors; returns the rung after each.
std::vector<int> run(fidelity_controller& c, const std::vector<double>& error_of_rung, int checks, std::mt19937& rng) {
  std::vector<int> rungs;
  for (int i = 0; i < checks; ++i) {
    c.observe(1, simulated_check(error_of_rung[static_cast<std::size_t>(c.report(1).rung)], rng));
    rungs.push_back(c.report(1).rung);
  }
  return rungs;
}

TEST(fidelity_controller, tightens_below_target) {
  std::mt19937 rng(1);
  auto c = *fidelity_controller::make(config_at(0));
  // Rungs 0-2 miss the target (error 8e-3, 4e-3, 1.5e-3); 3 meets it comfortably.
  const std::vector<double> err{8e-3, 4e-3, 1.5e-3, 3e-4, 1e-4};
  EXPECT_DOUBLE_EQ(c.tolerance(1), 0.4) << "a new stream starts on the start rung";
  auto rungs = run(c, err, 4, rng);
  EXPECT_GE(rungs.back(), 3) << "safer rung by rung until the target holds";
  EXPECT_LE(rungs[0] + 0, 3);
  EXPECT_GE(rungs[0], 1) << "the first check below target moves at once";
  EXPECT_GE(c.report(1).tighter, 1u);
}

TEST(fidelity_controller, loosens_while_comfortably_above_target) {
  std::mt19937 rng(2);
  auto c = *fidelity_controller::make(config_at(4));
  // Every rung down to 1 is comfortable (error under half the allowed); 0 misses.
  const std::vector<double> err{3e-3, 2e-4, 1.5e-4, 1e-4, 5e-5};
  auto rungs = run(c, err, 20, rng);
  EXPECT_EQ(rungs[2], 4) << "patience: no move before 4 comfortable checks";
  EXPECT_EQ(rungs[3], 3);
  EXPECT_EQ(rungs[11], 1) << "one rung cheaper per 4 comfortable checks";
  EXPECT_EQ(rungs[15], 0);
  EXPECT_EQ(rungs[16], 2) << "rung 0 misses by 3x: back two rungs at once";
  EXPECT_GE(rungs.back(), 1) << "rung 0 stays closed after failing";
  EXPECT_EQ(c.report(1).looser, 4u);
}

TEST(fidelity_controller, holds_still_on_a_stationary_input) {
  std::mt19937 rng(3);
  auto c = *fidelity_controller::make(config_at(4));
  // Rung 2 is cheapest meeting the target; rung 1 misses it.
  const std::vector<double> err{6e-3, 1.5e-3, 3e-4, 1e-4, 5e-5};
  run(c, err, 30, rng);
  const auto before = c.report(1);
  auto rungs = run(c, err, 400, rng);
  const auto after = c.report(1);
  const auto moves = (after.tighter + after.looser) - (before.tighter + before.looser);
  EXPECT_LE(moves, 10u) << "each failed probe of the cheaper rung doubles how long it stays closed";
  int at_best = 0, at_failing = 0;
  for (int r : rungs) {
    at_best += r == 2;
    at_failing += r < 2;
  }
  EXPECT_GE(at_best, 370) << "settled on the cheapest rung that meets the target";
  EXPECT_LE(at_failing, 12) << "each probe of the narrowly failing rung lasts two checks";
}

TEST(fidelity_controller, holds_in_the_band_between_target_and_comfort) {
  std::mt19937 rng(4);
  auto c = *fidelity_controller::make(config_at(2));
  // Rung 2 meets the target but not comfortably: no reason to move either way.
  const std::vector<double> err{6e-3, 2e-3, 7e-4, 1e-4, 5e-5};
  run(c, err, 100, rng);
  EXPECT_EQ(c.report(1).rung, 2);
  EXPECT_EQ(c.report(1).tighter + c.report(1).looser, 0u);
}

TEST(fidelity_controller, follows_a_change_of_conditions_within_a_few_checks) {
  std::mt19937 rng(5);
  auto c = *fidelity_controller::make(config_at(2));
  const std::vector<double> clean{2e-4, 1e-4, 5e-5, 3e-5, 1e-5};
  run(c, clean, 40, rng);
  EXPECT_EQ(c.report(1).rung, 0) << "clean: the cheapest rung";
  // Noise arrives: every rung's error grows tenfold; only rung 4 meets the target.
  const std::vector<double> noisy{2e-2, 1e-2, 3e-3, 1.2e-3, 4e-4};
  auto rungs = run(c, noisy, 4, rng);
  EXPECT_EQ(rungs.back(), 4) << "a far miss jumps several rungs";
  EXPECT_GE(c.report(1).measured, 0.0);
}

TEST(fidelity_controller, a_disagreeing_answer_under_the_agreement_target_tightens) {
  auto cfg = config_at(1);
  cfg.answer_window = 10;
  auto c = *fidelity_controller::make(cfg);
  for (int i = 0; i < 9; ++i) EXPECT_FALSE(c.observe_answer(1, true).moved());
  EXPECT_TRUE(c.observe_answer(1, false).moved()) << "9 of 10 agree, under 0.99";
  EXPECT_EQ(c.report(1).rung, 2);
  EXPECT_EQ(c.report(1).answers_audited, 10u);
  EXPECT_NEAR(c.report(1).agreement, 0.9, 1e-12);
  EXPECT_EQ(c.report(2).rung, 1) << "streams are apart";
}

TEST(fidelity_controller, the_reported_fidelity_is_the_low_percentile_over_the_window) {
  auto cfg = config_at(0);
  cfg.window = 2;
  cfg.target.cosine = 0.9;  // nothing moves: the window stays
  auto c = *fidelity_controller::make(cfg);
  std::vector<float> a(100, 1.0f), b(100, 1.0f);
  a[0] = 0.5f;  // the worst of 200 tokens: below the 1st percentile (the 3rd lowest)
  b[0] = 0.99f;
  b[1] = 0.995f;
  c.observe(1, a);
  c.observe(1, b);
  EXPECT_NEAR(c.report(1).measured, 0.995, 1e-6);
  EXPECT_NEAR(low_percentile({0.2f, 0.1f, 0.3f}, 1.0), 0.1, 1e-6);
  EXPECT_DOUBLE_EQ(low_percentile({}, 1.0), 1.0);
}

TEST(fidelity_controller, refuses_a_bad_configuration_naming_it) {
  auto c = config_at(0);
  c.ladder = {0.1, 0.2};
  auto bad = fidelity_controller::make(c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("cheapest (largest) to safest"), std::string::npos) << bad.err().message;
  c = config_at(7);
  EXPECT_NE(fidelity_controller::make(c).err().message.find("start rung 7"), std::string::npos);
  c = config_at(0);
  c.target.cosine = 1.5;
  EXPECT_NE(fidelity_controller::make(c).err().message.find("target"), std::string::npos);
}

}  // namespace
}  // namespace vlcache
