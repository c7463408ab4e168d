// core's cache step (decide -> plan -> encode -> commit) on synthetic frames
// whose changed patches are known: what a budget defers keeps its old
// reference, a failed encode makes the next frame full, and a frame whose
// every patch changed equals the full forward.

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/cache_step.hpp"
#include "core/patch_signatures.hpp"
#include "core/preprocess.hpp"

namespace vlcache {
namespace {

const std::string model = std::string(VLCACHE_FIXTURES) + "/clip_tiny/llava_new";

/// A 32x32 frame (4x4 patches of 8 px): a fixed texture, with the patches in
/// `changed` painted over with a different one.
struct frame {
  preprocessed_image pre;
  frame_signatures sigs;
};

frame make_frame(const std::set<int>& changed, int variant = 1) {
  std::vector<std::uint8_t> rgb(32 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) {
        const int patch = (y / 8) * 4 + x / 8;
        const int v = changed.count(patch) ? (x * 13 + y * 7 + c * 50 + variant * 90) % 256 : (x * 5 + y * 11 + c * 30) % 256;
        rgb[(y * 32 + x) * 3 + c] = static_cast<std::uint8_t>(v);
      }
  auto pre = *preprocess(image_view{rgb.data(), 32, 32, 3, 1, 0, channel_order::rgb}, preprocess_config::clip(32));
  const auto grid = *patch_grid::make(32, 8);
  auto sigs = *signature_engine::make(grid)->compute(
      image_view{pre.rgb.data(), pre.size, pre.size, 3, 1, 0, channel_order::rgb});
  return {std::move(pre), std::move(sigs)};
}

gate_thresholds mad_gate() {
  gate_thresholds t;
  t.mad = 3.0f;
  return t;
}

struct cache_step_fixture : ::testing::Test {
  void SetUp() override {
    auto e = vision_encoder::load(model, encoder_options{});
    ASSERT_TRUE(e) << e.err().message;
    enc = std::move(*e);
  }
  expected<std::vector<frame_result>> run(cache_step& step, const frame& f, std::uint64_t seq,
                                          std::vector<step_plan>* plans = nullptr) {
    return step.run(*enc, {{0, seq, &f.sigs, f.pre.pixels.data()}}, plans);
  }
  std::unique_ptr<vision_encoder> enc;
};

TEST_F(cache_step_fixture, a_deferred_miss_keeps_its_old_reference) {
  drift_config budget;
  budget.max_tokens_per_frame = 1;
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), budget);
  const auto a = make_frame({}), b = make_frame({3, 7, 12});
  std::vector<step_plan> plans;
  ASSERT_TRUE(run(step, a, 0, &plans));
  EXPECT_TRUE(plans[0].plan.full);
  ASSERT_TRUE(run(step, b, 1, &plans));
  ASSERT_EQ(plans[0].plan.positions.size(), 1u);
  EXPECT_EQ(plans[0].plan.deferred, 2);
  const int computed = plans[0].plan.positions[0];
  // Still b: the two deferred patches miss again (their reference is a's).
  ASSERT_TRUE(run(step, b, 2, &plans));
  EXPECT_EQ(plans[0].decision.misses(), 2);
  // Back to a: only the patches whose tokens were computed from b miss.
  ASSERT_TRUE(run(step, a, 3, &plans));
  std::set<int> misses(plans[0].decision.miss_positions.begin(), plans[0].decision.miss_positions.end());
  EXPECT_TRUE(misses.count(computed)) << "computed from b, so it differs from a";
  EXPECT_EQ(misses.size(), 2u) << "the patch deferred twice kept a's reference and hits";
}

TEST_F(cache_step_fixture, a_failed_encode_makes_the_next_frame_full) {
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), drift_config{});
  const auto a = make_frame({}), b = make_frame({5});
  std::vector<step_plan> plans;
  ASSERT_TRUE(run(step, a, 0, &plans));
  // A frame without pixels fails in the encoder.
  auto failed = step.run(*enc, {{0, 1, &b.sigs, nullptr}});
  ASSERT_FALSE(failed);
  auto next = run(step, b, 2, &plans);
  ASSERT_TRUE(next) << next.err().message;
  EXPECT_TRUE(plans[0].plan.full);
  EXPECT_EQ(plans[0].decision.misses(), 16) << "every reference was dropped";
}

TEST_F(cache_step_fixture, every_patch_changed_equals_the_full_forward_and_an_unchanged_frame_costs_nothing) {
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), drift_config{});
  std::set<int> all;
  for (int p = 0; p < 16; ++p) all.insert(p);
  const auto a = make_frame({}), b = make_frame(all);
  ASSERT_TRUE(run(step, a, 0));
  std::vector<step_plan> plans;
  auto out = run(step, b, 1, &plans);
  ASSERT_TRUE(out);
  EXPECT_FALSE(plans[0].plan.full);
  EXPECT_EQ((*out)[0].computed, 16);
  const auto sparse = (*out)[0].features.to_vector();
  const auto full = (*enc->encode_full({b.pre.pixels.data()}))[0].features.to_vector();
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    worst = std::max(worst, std::fabs(double(sparse[i]) - full[i]));
    scale = std::max(scale, std::fabs(double(full[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale);
  auto again = run(step, b, 2);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[0].computed, 0);
  EXPECT_EQ((*again)[0].features.to_vector(), sparse);
}

TEST_F(cache_step_fixture, two_frames_of_one_stream_in_one_batch_are_refused) {
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), drift_config{});
  const auto a = make_frame({});
  auto r = step.run(*enc, {{0, 0, &a.sigs, a.pre.pixels.data()}, {0, 1, &a.sigs, a.pre.pixels.data()}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("stream 0 has two frames"), std::string::npos) << r.err().message;
}

}  // namespace
}  // namespace vlcache
