// core's cache step (decide -> plan -> encode -> commit) on synthetic frames
// whose changed patches are known: what a budget defers keeps its old
// reference, a failed encode makes the next frame full, and a frame whose
// every patch changed equals the full forward.

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/models/cache_step.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"

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

// View memory: the frames of a view, then another view (a PTZ preset),
// then the first again. Going back restores the first view's state, so the
// stream computes only what changed in it, exactly as a stream that never
// left computes.
std::set<int> every_patch() {
  std::set<int> all;
  for (int p = 0; p < 16; ++p) all.insert(p);
  return all;
}

expected<frame_result> run_one(cache_step& step, vision_encoder& enc, stream_id stream, const frame& f,
                               std::uint64_t seq, step_plan* plan = nullptr) {
  std::vector<step_plan> plans;
  auto out = step.run(enc, {{stream, seq, &f.sigs, f.pre.pixels.data()}}, &plans);
  if (!out) return out.err();
  if (plan != nullptr) *plan = plans[0];
  return (*out)[0];
}

view_memory_config keep_views(int n) {
  view_memory_config v;
  v.max_views = n;
  return v;
}

TEST_F(cache_step_fixture, restoring_a_view_equals_having_kept_it) {
  const auto grid = *patch_grid::make(32, 8);
  auto patrol = *cache_step::make(grid, mad_gate(), drift_config{}, keep_views(2));
  auto stays = *cache_step::make(grid, mad_gate(), drift_config{});
  const auto x1 = make_frame({}), x2 = make_frame({5}), y = make_frame(every_patch(), 2);
  step_plan plan;
  ASSERT_TRUE(run_one(patrol, *enc, 0, x1, 0));
  ASSERT_TRUE(run_one(stays, *enc, 1, x1, 0));
  auto cut = run_one(patrol, *enc, 0, y, 1, &plan);
  ASSERT_TRUE(cut) << cut.err().message;
  EXPECT_TRUE(plan.cut) << "leaving the view keeps it";
  EXPECT_FALSE(plan.restore.has_value()) << "nothing was kept that looks like y";
  EXPECT_TRUE(cut->full);
  ASSERT_EQ(patrol.views(0)->kept().size(), 1u);
  EXPECT_TRUE(enc->has_stream(patrol.views(0)->kept()[0])) << "the snapshot's tokens stay in the encoder";
  auto back = run_one(patrol, *enc, 0, x2, 2, &plan);
  ASSERT_TRUE(back) << back.err().message;
  ASSERT_TRUE(plan.restore.has_value());
  EXPECT_FALSE(back->full);
  EXPECT_EQ(back->computed, 1) << "only the patch that changed in the view";
  auto kept = run_one(stays, *enc, 1, x2, 1);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->computed, 1);
  EXPECT_EQ(back->features.to_vector(), kept->features.to_vector());
  EXPECT_EQ(patrol.views(0)->cuts(), 2u);
  EXPECT_EQ(patrol.views(0)->restored(), 1u);
  ASSERT_EQ(patrol.views(0)->kept().size(), 1u) << "y is kept now, x is the stream's again";
  patrol.end_stream(0, *enc);
  EXPECT_FALSE(enc->has_stream(0));
  EXPECT_EQ(enc->store_bytes_total(), enc->store_bytes(1)) << "the views went with the stream";
}

TEST_F(cache_step_fixture, views_are_bounded_and_a_view_not_kept_runs_in_full) {
  const auto grid = *patch_grid::make(32, 8);
  auto step = *cache_step::make(grid, mad_gate(), drift_config{}, keep_views(1));
  const auto x = make_frame({}), y = make_frame(every_patch(), 2), z = make_frame(every_patch(), 1);
  step_plan plan;
  ASSERT_TRUE(run_one(step, *enc, 0, x, 0));
  ASSERT_TRUE(run_one(step, *enc, 0, y, 1));
  const stream_id x_view = step.views(0)->kept().at(0);
  ASSERT_TRUE(run_one(step, *enc, 0, z, 2, &plan));
  EXPECT_FALSE(plan.restore.has_value());
  ASSERT_EQ(step.views(0)->kept().size(), 1u) << "one view kept at most";
  EXPECT_FALSE(enc->has_stream(x_view)) << "the view let go frees its tokens";
  auto again = run_one(step, *enc, 0, x, 3, &plan);
  ASSERT_TRUE(again);
  EXPECT_FALSE(plan.restore.has_value()) << "x was not kept";
  EXPECT_TRUE(again->full);
  EXPECT_EQ(step.views(0)->restored(), 0u);
}

TEST_F(cache_step_fixture, a_view_the_store_budget_evicted_comes_back_in_full) {
  encoder_options o;
  o.store_budget.capacity_bytes = enc->state_bytes();  // room for one state: views compete with the stream
  o.store_budget.policy = eviction_policy::lru;          // the newest state always gets room
  auto small = vision_encoder::load(model, o);
  ASSERT_TRUE(small) << small.err().message;
  auto& e = **small;
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), drift_config{}, keep_views(2));
  const auto x1 = make_frame({}), x2 = make_frame({5}), y = make_frame(every_patch(), 2);
  step_plan plan;
  ASSERT_TRUE(run_one(step, e, 0, x1, 0));
  ASSERT_TRUE(run_one(step, e, 0, y, 1));
  ASSERT_EQ(step.views(0)->kept().size(), 1u);
  EXPECT_FALSE(e.has_stream(step.views(0)->kept()[0])) << "the stream's new state took the view's room";
  EXPECT_LE(e.store_bytes_total(), e.store_capacity());
  auto back = run_one(step, e, 0, x2, 2, &plan);
  ASSERT_TRUE(back) << back.err().message;
  EXPECT_TRUE(plan.restore.has_value()) << "the gate still knows the view";
  EXPECT_TRUE(back->full) << "its tokens are gone: the frame runs in full";
  const auto full = (*e.encode_full({x2.pre.pixels.data()}))[0].features.to_vector();
  const auto got = back->features.to_vector();
  ASSERT_EQ(got.size(), full.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - full[i]));
    scale = std::max(scale, std::fabs(double(full[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale);
  // Committed in full: the view's next frame costs nothing.
  auto next = run_one(step, e, 0, x2, 3);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->computed, 0);
}

// By value (the default) the new view's frames, which have saved nothing
// yet, do not displace the kept view's state: they run in full and keep
// nothing, and the camera's return to the kept view is gated against it.
TEST_F(cache_step_fixture, by_value_a_kept_view_keeps_its_state_and_comes_back_gated) {
  encoder_options o;
  o.store_budget.capacity_bytes = enc->state_bytes();
  auto small = vision_encoder::load(model, o);
  ASSERT_TRUE(small) << small.err().message;
  auto& e = **small;
  auto step = *cache_step::make(*patch_grid::make(32, 8), mad_gate(), drift_config{}, keep_views(2));
  const auto x1 = make_frame({}), x2 = make_frame({5}), y = make_frame(every_patch(), 2);
  step_plan plan;
  ASSERT_TRUE(run_one(step, e, 0, x1, 0));
  auto cut = run_one(step, e, 0, y, 1);
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->full && cut->refilled) << "the new view runs in full without a state";
  ASSERT_EQ(step.views(0)->kept().size(), 1u);
  EXPECT_TRUE(e.has_stream(step.views(0)->kept()[0])) << "the kept view's state stayed";
  EXPECT_FALSE(e.has_stream(0));
  EXPECT_LE(e.store_bytes_total(), e.store_capacity());
  auto back = run_one(step, e, 0, x2, 2, &plan);
  ASSERT_TRUE(back) << back.err().message;
  EXPECT_TRUE(plan.restore.has_value());
  EXPECT_FALSE(back->full) << "gated against the restored view";
  EXPECT_LT(back->computed, 16);
  EXPECT_TRUE(e.has_stream(0));
  EXPECT_LE(e.store_bytes_total(), e.store_capacity());
}

}  // namespace
}  // namespace vlcache
