// The byte budget over stream states: eviction order per policy, the
// capacity never exceeded under random stream churn, an impossible request
// refused with the figures.

#include <gtest/gtest.h>

#include <random>

#include "core/cache/store_budget.hpp"

namespace vlcache {
namespace {

store_budget make(eviction_policy p, std::uint64_t capacity, double half_life = 4.0) {
  store_budget_config c;
  c.capacity_bytes = capacity;
  c.policy = p;
  c.half_life = half_life;
  return store_budget(c);
}

void add(store_budget& b, stream_id s, std::uint64_t bytes, int uses = 1) {
  b.charge(s, bytes);
  for (int i = 0; i < uses; ++i) b.use(s);
}

TEST(store_budget, unbounded_never_evicts) {
  auto b = make(eviction_policy::lru, 0);
  add(b, 1, 1000);
  EXPECT_FALSE(b.bounded());
  EXPECT_TRUE(b.make_room(1ull << 40, {})->empty());
}

TEST(store_budget, lru_gives_up_the_least_recently_used_first) {
  auto b = make(eviction_policy::lru, 300);
  EXPECT_EQ(store_budget_config{}.policy, eviction_policy::value) << "the default decides by value";
  add(b, 1, 100);
  add(b, 2, 100);
  add(b, 3, 100);
  b.use(1);  // 2 is now the least recent
  EXPECT_EQ(*b.make_room(100, {}), (std::vector<stream_id>{2}));
  EXPECT_EQ(*b.make_room(200, {}), (std::vector<stream_id>{2, 3}));
  EXPECT_EQ(*b.make_room(100, {2}), (std::vector<stream_id>{3})) << "a stream being encoded is never evicted";
  EXPECT_TRUE(b.make_room(0, {})->empty());
}

TEST(store_budget, lfu_gives_up_the_least_used_first) {
  auto b = make(eviction_policy::lfu, 300);
  add(b, 1, 100, 5);
  add(b, 2, 100, 1);
  add(b, 3, 100, 3);
  EXPECT_EQ(*b.make_room(100, {}), (std::vector<stream_id>{2}));
  EXPECT_EQ(*b.make_room(200, {}), (std::vector<stream_id>{2, 3}));
}

TEST(store_budget, decayed_frequency_forgets_old_uses) {
  auto b = make(eviction_policy::decayed_frequency, 200, 2.0);
  add(b, 1, 100, 6);  // many uses, long ago
  add(b, 2, 100, 1);
  for (int i = 0; i < 20; ++i) b.use(2);  // recent uses: 1's score halves every 2 of them
  EXPECT_EQ(*b.make_room(100, {}), (std::vector<stream_id>{1}));
  auto lfu = make(eviction_policy::lfu, 200);
  add(lfu, 1, 100, 6);
  add(lfu, 2, 100, 3);
  EXPECT_EQ(*lfu.make_room(100, {}), (std::vector<stream_id>{2})) << "plain counts would keep 1";
}

TEST(store_budget, refuses_what_cannot_fit_and_names_the_figures) {
  auto b = make(eviction_policy::lru, 250);
  add(b, 1, 100);
  add(b, 2, 100);
  auto r = b.make_room(200, {1});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, errc::capacity);
  EXPECT_NE(r.err().message.find("budget of 250 bytes cannot hold 300 bytes"), std::string::npos) << r.err().message;
  store_budget_config bad;
  bad.half_life = 0;
  EXPECT_FALSE(bad.validate());
}

// Streams come, go and are encoded at random, in batches of up to three;
// every batch makes room first, as the encoder does: the total never
// passes the capacity, and the streams of a batch are never given up.
TEST(store_budget, capacity_is_never_exceeded_under_random_churn) {
  for (auto policy : {eviction_policy::lru, eviction_policy::lfu, eviction_policy::decayed_frequency}) {
    auto b = make(policy, 1000);
    std::mt19937 rng(7);
    std::set<stream_id> held;
    int evictions = 0;
    for (int step = 0; step < 5000; ++step) {
      if (rng() % 20 == 0 && !held.empty()) {  // a camera leaves
        auto it = held.begin();
        std::advance(it, rng() % held.size());
        b.release(*it);
        held.erase(it);
        continue;
      }
      std::set<stream_id> batch;
      const int n = 1 + static_cast<int>(rng() % 3);
      while (static_cast<int>(batch.size()) < n) batch.insert(static_cast<stream_id>(rng() % 12));
      std::uint64_t needed = 0;
      for (auto s : batch)
        if (!held.count(s)) needed += 200;
      auto victims = b.make_room(needed, batch);
      ASSERT_TRUE(victims) << victims.err().message;
      for (auto v : *victims) {
        EXPECT_FALSE(batch.count(v));
        b.release(v);
        held.erase(v);
        ++evictions;
      }
      for (auto s : batch) {
        b.charge(s, 200);
        b.use(s);
        held.insert(s);
      }
      ASSERT_LE(b.used(), 1000u) << "step " << step << ", policy " << to_string(policy);
    }
    EXPECT_GT(evictions, 100) << to_string(policy);
  }
}


/// One camera frame as the encoder handles it under the budget: room asked
/// for a stream without a state, the plan applied, the frame's saving
/// counted. True when the frame found its state (its tokens reused).
bool encode_one(store_budget& b, stream_id s, std::uint64_t bytes, double saved, int* evictions = nullptr) {
  const bool hit = b.holds(s);
  if (!hit) {
    auto plan = b.plan_room({s}, bytes, {s});
    EXPECT_TRUE(plan) << plan.err().message;
    for (auto v : plan->victims) {
      b.charge(v, 0);
      if (evictions) ++*evictions;
    }
    b.charge(s, plan->denied.count(s) ? 0 : bytes);
  }
  b.use(s, saved);
  return hit;
}

// The textbook worst case for recency: round-robin over twice as many
// streams as states fit. LRU gives up the very state the next frame needs,
// so no frame finds its state; by value the first half keeps its states
// (the others save as much, never clearly more) and its frames hit.
TEST(store_budget, round_robin_over_twice_the_capacity_keeps_half_resident_by_value_and_none_by_lru) {
  const int streams = 16, fit = 8;
  for (auto policy : {eviction_policy::value, eviction_policy::lru}) {
    auto b = make(policy, fit * 100, 100.0);
    int hits = 0, frames = 0, evictions = 0;
    for (int round = 0; round < 50; ++round)
      for (stream_id s = 0; s < streams; ++s) {
        const bool hit = encode_one(b, s, 100, 0.9, &evictions);
        if (round >= 5) {  // after the first rounds
          hits += hit;
          ++frames;
        }
        ASSERT_LE(b.used(), static_cast<std::uint64_t>(fit * 100));
      }
    int resident = 0;
    for (stream_id s = 0; s < streams; ++s) resident += b.holds(s);
    if (policy == eviction_policy::value) {
      EXPECT_EQ(resident, fit);
      EXPECT_EQ(hits, frames / 2) << "half the frames find their state";
      EXPECT_EQ(evictions, 0) << "equal streams do not displace each other";
    } else {
      EXPECT_EQ(hits, 0) << "LRU evicts what the next frame needs";
      EXPECT_GT(evictions, 700);
    }
  }
}

// Many cameras behind an overloaded encoder: each encoded frame comes from
// a random one of 256 streams (drops break the round-robin), all saving
// alike, room for 120 states. A stream's value must not depend on how long
// ago its last frame came: the resident set settles (a half-life of 100
// frames, shorter than the ~256 frames between a stream's frames, made
// the states follow the order of arrival: evictions on most misses).
TEST(store_budget, the_value_policy_settles_with_many_streams_in_random_order) {
  const int streams = 256, fit = 120;
  auto b = make(eviction_policy::value, fit * 100, 100.0);
  std::mt19937 rng(7);
  int hits = 0, frames = 0, evictions = 0, late_evictions = 0;
  for (int step = 0; step < 40000; ++step) {
    const auto s = static_cast<stream_id>(rng() % streams);
    int e = 0;
    const bool hit = encode_one(b, s, 100, 0.9, &e);
    evictions += e;
    if (step >= 20000) {
      hits += hit;
      ++frames;
      late_evictions += e;
    }
    ASSERT_LE(b.used(), static_cast<std::uint64_t>(fit * 100));
  }
  EXPECT_LT(late_evictions, frames / 100) << "the resident set settles (" << evictions << " evictions in all)";
  EXPECT_GT(hits, frames * 0.9 * fit / streams) << "about fit / streams of the frames find their state";
}

// Under churn the states go to the streams that save the most: streams of
// a busy scene (little reused) lose theirs to streams of a static one, and
// a stream whose scene turns static earns a state back.
TEST(store_budget, the_value_policy_keeps_the_states_that_save_the_most) {
  auto b = make(eviction_policy::value, 3 * 100, 50.0);
  std::vector<double> saved = {0.1, 0.95, 0.2, 0.9, 0.15, 0.92};  // 1, 3 and 5 are static scenes
  for (int round = 0; round < 60; ++round)
    for (stream_id s = 0; s < saved.size(); ++s) encode_one(b, s, 100, saved[s]);
  EXPECT_TRUE(b.holds(1) && b.holds(3) && b.holds(5));
  EXPECT_FALSE(b.holds(0) || b.holds(2) || b.holds(4));
  saved[0] = 1.0;  // camera 0's scene stops moving; 3's gets busy
  saved[3] = 0.05;
  for (int round = 0; round < 60; ++round)
    for (stream_id s = 0; s < saved.size(); ++s) encode_one(b, s, 100, saved[s]);
  EXPECT_TRUE(b.holds(0) && b.holds(1) && b.holds(5));
  EXPECT_FALSE(b.holds(3));
  EXPECT_LE(b.used(), 300u);
}

// The value policy under random churn: never over capacity, never a
// stream of the batch given up, and a stream denied room stores nothing.
TEST(store_budget, the_value_policy_never_exceeds_the_capacity) {
  auto b = make(eviction_policy::value, 1000, 20.0);
  std::mt19937 rng(11);
  for (int step = 0; step < 5000; ++step) {
    std::set<stream_id> batch;
    const int n = 1 + static_cast<int>(rng() % 3);
    while (static_cast<int>(batch.size()) < n) batch.insert(static_cast<stream_id>(rng() % 12));
    std::vector<stream_id> newcomers;
    for (auto s : batch)
      if (!b.holds(s)) newcomers.push_back(s);
    auto plan = b.plan_room(newcomers, 200, batch);
    ASSERT_TRUE(plan) << plan.err().message;
    for (auto v : plan->victims) {
      EXPECT_FALSE(batch.count(v));
      b.charge(v, 0);
    }
    for (auto s : newcomers) b.charge(s, plan->denied.count(s) ? 0 : 200);
    for (auto s : batch) b.use(s, static_cast<double>(rng() % 100) / 100.0);
    ASSERT_LE(b.used(), 1000u) << "step " << step;
  }
}

}  // namespace
}  // namespace vlcache
