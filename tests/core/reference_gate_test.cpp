// Reference gating: decisions against the signature recorded at the last
// compute, slow ramps, partial commits, stream lifetime and bad input.

#include <gtest/gtest.h>

#include <random>

#include "core/reference_gate.hpp"

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
  static const auto engine = *signature_engine::make(*patch_grid::make(size, patch));
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

}  // namespace
}  // namespace vlcache
