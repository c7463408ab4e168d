// Reference gating: decisions against the signature recorded at the last
// compute, slow ramps, partial commits, stream lifetime and bad input.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/cache/reference_gate.hpp"

namespace vlcache {
namespace {

constexpr int size = 64, patch = 16;  // 16 positions

std::vector<std::uint8_t> textured(unsigned seed, int offset = 0) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(40, 200);
  std::vector<std::uint8_t> px(size * size * 3);
  for (auto& v : px) v = static_cast<std::uint8_t>(d(rng) + offset);
  return px;
}

frame_signatures sign(const std::vector<std::uint8_t>& px) {
  static const auto engine = *signature_engine::make(*patch_grid::make(size, patch), true);
  return *engine.compute(image_view{px.data(), size, size, 3, 1, 0, channel_order::rgb});
}

reference_gate make_gate(gate_thresholds t) {
  auto g = reference_gate::make(*patch_grid::make(size, patch), t);
  EXPECT_TRUE(g) << (g ? "" : g.err().message);
  return std::move(*g);
}

gate_thresholds mad_only(float t) {
  gate_thresholds g;
  g.mad = t;
  return g;
}

TEST(reference_gate, first_frame_misses_everywhere_then_an_identical_frame_hits) {
  auto gate = make_gate(mad_only(4));
  const auto s = sign(textured(1));
  auto d = gate.decide(7, s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->misses(), 16);
  ASSERT_TRUE(gate.commit(7, s, d->miss_positions, 0));
  auto again = gate.decide(7, s);
  EXPECT_EQ(again->misses(), 0);
  EXPECT_EQ(gate.stats(7).hits, 16u);
  EXPECT_EQ(gate.stats(7).misses, 16u);
  EXPECT_EQ(gate.computed_at(7, 3), std::optional<std::uint64_t>(0));
}

// Each frame is one level brighter than the last: frame-to-frame the change
// is always 1, but against the reference it grows until it passes the
// threshold (6), every position misses, and the new reference then holds.
TEST(reference_gate, slow_brightness_ramp_ends_in_a_miss_then_the_new_reference_holds) {
  auto gate = make_gate(mad_only(6));
  std::vector<int> misses;
  for (int frame = 0; frame <= 14; ++frame) {
    const auto s = sign(textured(2, frame));
    auto d = gate.decide(0, s);
    ASSERT_TRUE(d);
    misses.push_back(d->misses());
    ASSERT_TRUE(gate.commit(0, s, d->miss_positions, frame));
  }
  // Frame 0: no reference. Frames 1..6: within 6 of frame 0. Frame 7: 7 > 6.
  // Frames 8..13: within 6 of frame 7. Frame 14: miss again.
  const std::vector<int> expected{16, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 16};
  EXPECT_EQ(misses, expected);
  EXPECT_EQ(gate.computed_at(0, 0), std::optional<std::uint64_t>(14));
}

TEST(reference_gate, uncommitted_positions_keep_their_old_reference) {
  auto gate = make_gate(mad_only(2));
  const auto a = sign(textured(3)), b = sign(textured(4));
  auto d0 = gate.decide(0, a);
  ASSERT_TRUE(gate.commit(0, a, d0->miss_positions, 0));
  auto d1 = gate.decide(0, b);
  ASSERT_EQ(d1->misses(), 16);
  // A compute budget recomputed only positions 0..3.
  ASSERT_TRUE(gate.commit(0, b, {0, 1, 2, 3}, 1));
  auto d2 = gate.decide(0, b);
  EXPECT_EQ(d2->misses(), 12);
  EXPECT_EQ(d2->miss[0], 0);
  EXPECT_EQ(d2->miss[4], 1);
  EXPECT_EQ(gate.computed_at(0, 4), std::optional<std::uint64_t>(0));
}

TEST(reference_gate, invalidated_positions_miss_on_the_next_frame) {
  auto gate = make_gate(mad_only(4));
  const auto a = sign(textured(10));
  auto d = gate.decide(0, a);
  ASSERT_TRUE(gate.commit(0, a, d->miss_positions, 0));
  ASSERT_TRUE(gate.invalidate(0, {2, 7}));
  auto again = gate.decide(0, a);
  EXPECT_EQ(again->miss_positions, (std::vector<int>{2, 7}));
  EXPECT_FALSE(gate.invalidate(0, {99}));
}

TEST(reference_gate, hash_gate_ignores_a_uniform_shift_that_the_mad_gate_catches) {
  gate_thresholds hashes;
  hashes.ahash = 4;
  hashes.dhash = 4;
  hashes.phash = 4;
  auto hash_gate = make_gate(hashes);
  auto mad_gate = make_gate(mad_only(6));
  const auto a = sign(textured(5)), shifted = sign(textured(5, 20));
  for (auto* g : {&hash_gate, &mad_gate}) {
    auto d = g->decide(0, a);
    ASSERT_TRUE(g->commit(0, a, d->miss_positions, 0));
  }
  EXPECT_EQ(hash_gate.decide(0, shifted)->misses(), 0);
  EXPECT_EQ(mad_gate.decide(0, shifted)->misses(), 16);
}

TEST(reference_gate, streams_are_independent_and_freed_at_end) {
  auto gate = make_gate(mad_only(4));
  const auto a = sign(textured(6)), b = sign(textured(7));
  auto d = gate.decide(1, a);
  ASSERT_TRUE(gate.commit(1, a, d->miss_positions, 0));
  EXPECT_EQ(gate.decide(2, a)->misses(), 16) << "stream 2 has no references of its own";
  EXPECT_EQ(gate.decide(1, a)->misses(), 0);
  EXPECT_EQ(gate.stream_count(), 2u);
  EXPECT_GT(gate.stats(1).bytes, 0u);
  gate.end_stream(1);
  EXPECT_EQ(gate.stream_count(), 1u);
  EXPECT_EQ(gate.stats(1).hits, 0u);
  EXPECT_EQ(gate.decide(1, a)->misses(), 16) << "references were freed";
  (void)b;
}

TEST(reference_gate, rejects_signatures_of_another_grid_and_keeps_state) {
  auto gate = make_gate(mad_only(4));
  const auto a = sign(textured(8));
  auto d = gate.decide(0, a);
  ASSERT_TRUE(gate.commit(0, a, d->miss_positions, 0));
  const auto before = gate.stats(0);
  auto other_engine = *signature_engine::make(*patch_grid::make(64, 8));
  auto px = textured(9);
  auto other = *other_engine.compute(image_view{px.data(), 64, 64, 3, 1, 0, channel_order::rgb});
  auto bad = gate.decide(0, other);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("64/8"), std::string::npos) << bad.err().message;
  EXPECT_FALSE(gate.commit(0, other, {0}, 1));
  EXPECT_FALSE(gate.commit(0, a, {16}, 1)) << "position outside the grid";
  EXPECT_EQ(gate.stats(0).hits, before.hits);
  EXPECT_EQ(gate.stats(0).misses, before.misses);
  EXPECT_EQ(gate.decide(0, a)->misses(), 0) << "references untouched";
}

TEST(reference_gate, validates_thresholds) {
  const auto grid = *patch_grid::make(size, patch);
  gate_thresholds none;
  EXPECT_NE(reference_gate::make(grid, none).err().message.find("no signature"), std::string::npos);
  gate_thresholds big;
  big.ahash = 65;
  EXPECT_NE(reference_gate::make(grid, big).err().message.find("ahash threshold 65"), std::string::npos);
  gate_thresholds neg;
  neg.mad = -1;
  EXPECT_FALSE(reference_gate::make(grid, neg));
}

// A camera's view: a smooth background (left half striped, right half a
// gentle gradient), shifted `shift` pixels to the left, with fresh Gaussian
// sensor noise each frame and optionally an object over positions 5, 6, 9, 10.
std::vector<std::uint8_t> camera_frame(unsigned frame, double sigma, int shift = 0, bool object = false,
                                       double light = 0) {
  std::mt19937 rng(1000 + frame);
  std::normal_distribution<double> noise(0.0, sigma);
  std::vector<std::uint8_t> px(size * size * 3);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const int u = x + shift;
      const double bg = u < 32 ? 110 + 40 * std::sin(u * 0.4) : 90 + 1.5 * u + 0.5 * y;
      const bool inside = object && x >= 16 && x < 48 && y >= 16 && y < 48;
      for (int c = 0; c < 3; ++c) {
        const double v = (inside ? (c == 0 ? 220.0 : 30.0) : bg) + light;
        px[(y * size + x) * 3 + c] = static_cast<std::uint8_t>(std::clamp(v + noise(rng), 0.0, 255.0) + 0.5);
      }
    }
  return px;
}

// Runs frames through a gate, committing every miss; returns the misses per frame.
template <typename Frame>
std::vector<int> run_frames(reference_gate& gate, int frames, Frame frame_at) {
  std::vector<int> misses;
  for (int f = 0; f < frames; ++f) {
    const auto s = sign(frame_at(f));
    auto d = gate.decide(0, s);
    EXPECT_TRUE(d);
    misses.push_back(d->misses());
    EXPECT_TRUE(gate.commit(0, s, d->miss_positions, static_cast<std::uint64_t>(f)));
  }
  return misses;
}

gate_thresholds noise_robust(bool adaptive) {
  gate_thresholds g = mad_only(3);
  g.mad_cell = 4;
  if (adaptive) g.noise_factor = 3;
  return g;
}

TEST(reference_gate, noise_floor_keeps_sensor_noise_a_hit_and_an_object_misses_in_its_first_frame) {
  constexpr double sigma = 10;  // a dark, noisy camera
  auto fixed = make_gate(noise_robust(false));
  auto adaptive = make_gate(noise_robust(true));
  auto static_then_object = [](int f) { return camera_frame(f, sigma, 0, f == 11); };
  const auto fixed_misses = run_frames(fixed, 12, static_then_object);
  const auto misses = run_frames(adaptive, 12, static_then_object);
  int fixed_noise = 0, adaptive_noise = 0;
  for (int f = 1; f <= 10; ++f) {
    fixed_noise += fixed_misses[f];
    adaptive_noise += misses[f];
  }
  EXPECT_GE(fixed_noise, 10) << "without the floor, noise this strong misses often";
  EXPECT_LE(adaptive_noise, 2) << "with it, the static frames are hits";
  EXPECT_NEAR(adaptive.noise_floor(0), sigma, 0.3 * sigma);
  EXPECT_GT(adaptive.effective_mad(0), 3.0f);
  // Frame 11: the object's four positions miss in the frame it appears.
  auto d = adaptive.decide(0, sign(camera_frame(11, sigma, 0, true)));
  ASSERT_TRUE(d);
  for (int pos : {5, 6, 9, 10}) EXPECT_EQ(d->miss[pos], 0) << "committed at frame 11 already";
  EXPECT_GE(misses[11], 4);
  auto fresh = make_gate(noise_robust(true));
  run_frames(fresh, 11, [](int f) { return camera_frame(f, sigma); });
  auto first = fresh.decide(0, sign(camera_frame(11, sigma, 0, true)));
  ASSERT_TRUE(first);
  for (int pos : {5, 6, 9, 10}) EXPECT_EQ(first->miss[pos], 1) << pos;
}

TEST(reference_gate, a_light_switched_on_over_a_noisy_view_misses_everywhere_in_its_frame) {
  constexpr double sigma = 10;
  auto adaptive = make_gate(noise_robust(true));
  // Frames 0-10 in the dark with noise, frame 11 with the light on (+40 levels).
  const auto misses = run_frames(adaptive, 12, [](int f) { return camera_frame(f, sigma, 0, false, f == 11 ? 40 : 0); });
  int dark = 0;
  for (int f = 1; f <= 10; ++f) dark += misses[f];
  EXPECT_LE(dark, 2) << "the noise alone stays a hit";
  EXPECT_EQ(misses[11], 16) << "every position is recomputed in the frame the light comes on";
}

TEST(reference_gate, a_pan_is_not_taken_for_noise) {
  constexpr double sigma = 2;
  auto gate = make_gate(noise_robust(true));
  const auto still = run_frames(gate, 6, [](int f) { return camera_frame(f, sigma); });
  const float floor_still = gate.noise_floor(0);
  EXPECT_NEAR(floor_still, sigma, 1.0);
  // The camera pans 3 pixels a frame: the floor is measured within a frame,
  // so it stays put and the moved content misses.
  const auto pan = run_frames(gate, 6, [](int f) { return camera_frame(6 + f, sigma, 3 * (f + 1)); });
  EXPECT_NEAR(gate.noise_floor(0), floor_still, 0.5);
  for (int f = 0; f < 6; ++f) EXPECT_GE(pan[f], 8) << "pan frame " << f;
}

TEST(reference_gate, noise_factor_refuses_signatures_without_a_noise_estimate) {
  auto gate = make_gate(noise_robust(true));
  static const auto plain = *signature_engine::make(*patch_grid::make(size, patch));
  auto px = camera_frame(0, 2);
  auto d = gate.decide(0, *plain.compute(image_view{px.data(), size, size, 3, 1, 0, channel_order::rgb}));
  ASSERT_FALSE(d);
  EXPECT_NE(d.err().message.find("noise estimate"), std::string::npos) << d.err().message;
}

TEST(reference_gate, validates_the_noise_keys) {
  const auto grid = *patch_grid::make(size, patch);
  gate_thresholds cell = mad_only(3);
  cell.mad_cell = 0;
  EXPECT_NE(reference_gate::make(grid, cell).err().message.find("mad_cell 0"), std::string::npos);
  cell.mad_cell = 32;
  EXPECT_NE(reference_gate::make(grid, cell).err().message.find("larger than the patch"), std::string::npos);
  gate_thresholds factor;
  factor.ahash = 4;
  factor.noise_factor = 2;
  EXPECT_NE(reference_gate::make(grid, factor).err().message.find("set mad"), std::string::npos);
  factor.mad = 3;
  factor.noise_factor = 0;
  EXPECT_FALSE(reference_gate::make(grid, factor));
}

}  // namespace
}  // namespace vlcache
