// The content-addressed token index: eviction order per policy on scripted
// sequences, the byte capacity under a long random workload, spatial
// lookup, stream lifetime and errors.

#include <gtest/gtest.h>

#include <random>

#include "core/cache/token_index.hpp"

namespace vlcache {
namespace {

constexpr std::size_t dim = 16;

token_index make_index(eviction_policy p, std::size_t entries, double half_life = 4.0) {
  token_index_config c;
  c.policy = p;
  c.capacity_bytes = entries * token_index::entry_bytes(dim);
  c.half_life = half_life;
  auto ix = token_index::make(c);
  EXPECT_TRUE(ix);
  return std::move(*ix);
}

std::vector<float> token(float v) { return std::vector<float>(dim, v); }

// Inserts keys 1..3 at t=1..3, then hits them in a scripted pattern and
// inserts key 4, which must evict exactly one entry.
std::uint64_t victim_after_script(eviction_policy p) {
  auto ix = make_index(p, 3);
  for (std::uint64_t k = 1; k <= 3; ++k) EXPECT_TRUE(ix.insert(k, 0, int(k), k, token(k), k));
  // key 1: two early hits; key 2: one late hit; key 3: none since insert.
  EXPECT_NE(ix.find(1, 0, 1, 4), nullptr);
  EXPECT_NE(ix.find(1, 0, 1, 5), nullptr);
  EXPECT_NE(ix.find(2, 0, 2, 40), nullptr);
  const auto order = ix.eviction_order();
  EXPECT_TRUE(ix.insert(4, 0, 4, 41, token(4), 41));
  EXPECT_EQ(ix.size(), 3u);
  for (std::uint64_t k = 1; k <= 3; ++k)
    if (ix.find(k, 9, 0, 42) == nullptr) {
      EXPECT_EQ(order.front(), k) << "eviction_order() named another victim";
      return k;
    }
  return 0;
}

TEST(token_index, lru_evicts_the_least_recently_used) {
  // Last uses: key 1 at 5, key 2 at 40, key 3 at 3.
  EXPECT_EQ(victim_after_script(eviction_policy::lru), 3u);
}

TEST(token_index, lfu_evicts_the_least_frequently_used) {
  // Hits: key 1 two, key 2 one, key 3 none.
  EXPECT_EQ(victim_after_script(eviction_policy::lfu), 3u);
}

TEST(token_index, decayed_frequency_forgets_old_hits) {
  // Half-life 4 ticks: key 1's three uses by t=5 have decayed to ~0.003 by
  // t=41; key 3's single use at t=3 to ~0.001; key 2's use at 40 is fresh.
  EXPECT_EQ(victim_after_script(eviction_policy::decayed_frequency), 3u);
}

TEST(token_index, lfu_and_decayed_frequency_disagree_when_hits_are_old) {
  auto run = [](eviction_policy p) {
    auto ix = make_index(p, 2, 2.0);
    EXPECT_TRUE(ix.insert(1, 0, 1, 0, token(1), 0));
    EXPECT_TRUE(ix.insert(2, 0, 2, 0, token(2), 0));
    for (std::uint64_t t = 1; t <= 5; ++t) EXPECT_NE(ix.find(1, 0, 1, t), nullptr);  // many, old
    EXPECT_NE(ix.find(2, 0, 2, 100), nullptr);                                      // one, recent
    EXPECT_NE(ix.find(2, 0, 2, 101), nullptr);
    return ix.eviction_order().front();
  };
  EXPECT_EQ(run(eviction_policy::lfu), 2u) << "LFU keeps the many old hits";
  EXPECT_EQ(run(eviction_policy::decayed_frequency), 1u) << "decay forgets them";
  EXPECT_EQ(run(eviction_policy::lru), 1u);
}

TEST(token_index, capacity_is_never_exceeded_under_a_long_random_workload) {
  for (auto p : {eviction_policy::lru, eviction_policy::lfu, eviction_policy::decayed_frequency}) {
    token_index_config c;
    c.policy = p;
    c.capacity_bytes = 50'000;
    auto ix = *token_index::make(c);
    std::mt19937_64 rng(42);
    std::uint64_t evictions = 0;
    for (std::uint64_t t = 0; t < 20'000; ++t) {
      const auto key = rng() % 500;
      const auto stream = static_cast<stream_id>(rng() % 3);
      const int pos = static_cast<int>(rng() % 64);
      if (rng() % 3 == 0) {
        auto id = ix.insert(key, stream, pos, t, std::vector<float>(1 + rng() % 100, 1.0f), t);
        ASSERT_TRUE(id);
      } else {
        (void)ix.find(key, stream, pos, t);
      }
      ASSERT_LE(ix.bytes(), c.capacity_bytes) << to_string(p) << " at t=" << t;
      std::uint64_t sum = 0;
      if (t % 1000 == 0) {
        for (stream_id s = 0; s < 3; ++s) sum += ix.stats(s).bytes;
        ASSERT_EQ(sum, ix.bytes()) << "per-stream bytes must add up";
      }
    }
    for (stream_id s = 0; s < 3; ++s) evictions += ix.stats(s).evictions;
    EXPECT_GT(evictions, 100u) << "the workload should have forced evictions";
  }
}

TEST(token_index, entry_larger_than_capacity_is_an_error) {
  auto ix = make_index(eviction_policy::lru, 1);
  auto r = ix.insert(1, 0, 0, 0, std::vector<float>(1000, 0.0f), 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::capacity);
  EXPECT_EQ(ix.size(), 0u);
}

TEST(token_index, reinserting_same_content_at_same_place_replaces_the_entry) {
  auto ix = make_index(eviction_policy::lru, 4);
  ASSERT_TRUE(ix.insert(9, 0, 3, 0, token(1), 0));
  ASSERT_TRUE(ix.insert(9, 0, 3, 5, token(2), 5));
  EXPECT_EQ(ix.size(), 1u);
  const auto* e = ix.find(9, 0, 3, 6);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->frame, 5u);
  EXPECT_EQ(e->token[0], 2.0f);
}

TEST(token_index, find_near_finds_content_that_moved_within_the_window) {
  const auto grid = *patch_grid::make(64, 8);  // 8x8 positions
  auto ix = make_index(eviction_policy::lru, 8);
  const std::uint64_t key = 0xF0F0F0F0F0F0F0F0ull;
  ASSERT_TRUE(ix.insert(key, 0, 2 * 8 + 2, 0, token(7), 0));  // row 2, col 2
  // The same content, two bits off, now seen at row 3, col 4.
  const std::uint64_t seen = key ^ 0b101;
  const auto* e = ix.find_near(seen, 0, 3 * 8 + 4, grid, 2, 4, 1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->position, 18);
  EXPECT_EQ(ix.find_near(seen, 0, 3 * 8 + 5, grid, 2, 4, 2), nullptr) << "outside the radius";
  EXPECT_EQ(ix.find_near(seen, 0, 3 * 8 + 4, grid, 2, 1, 3), nullptr) << "too many bits off";
  EXPECT_EQ(ix.find_near(seen, 1, 3 * 8 + 4, grid, 2, 4, 4), nullptr) << "other stream";
  EXPECT_EQ(ix.stats(0).hits, 1u);
  EXPECT_EQ(ix.stats(0).misses, 2u);
}

TEST(token_index, find_prefers_the_same_place_then_the_most_recent) {
  auto ix = make_index(eviction_policy::lru, 4);
  ASSERT_TRUE(ix.insert(5, 0, 1, 0, token(1), 0));
  ASSERT_TRUE(ix.insert(5, 1, 2, 0, token(2), 1));
  EXPECT_EQ(ix.find(5, 0, 1, 2)->token[0], 1.0f);
  EXPECT_EQ(ix.find(5, 2, 9, 3)->token[0], 1.0f) << "entry (0,1) was used last at t=2";
}

TEST(token_index, end_stream_frees_its_entries_and_bytes) {
  auto ix = make_index(eviction_policy::lru, 8);
  for (int p = 0; p < 3; ++p) ASSERT_TRUE(ix.insert(p, 0, p, 0, token(0), 0));
  ASSERT_TRUE(ix.insert(77, 1, 0, 0, token(0), 0));
  EXPECT_EQ(ix.stats(0).bytes, 3 * token_index::entry_bytes(dim));
  ix.end_stream(0);
  EXPECT_EQ(ix.size(), 1u);
  EXPECT_EQ(ix.bytes(), token_index::entry_bytes(dim));
  EXPECT_EQ(ix.stats(0).bytes, 0u);
  EXPECT_EQ(ix.find(1, 0, 1, 1), nullptr);
  EXPECT_NE(ix.find(77, 1, 0, 1), nullptr);
}

TEST(token_index, validates_config) {
  token_index_config c;
  c.capacity_bytes = 0;
  EXPECT_FALSE(token_index::make(c));
  c.capacity_bytes = 1000;
  c.half_life = 0;
  EXPECT_NE(token_index::make(c).err().message.find("half_life"), std::string::npos);
  EXPECT_NE(parse_eviction_policy("mru").err().message.find("'mru'"), std::string::npos);
}

}  // namespace
}  // namespace vlcache
