// A camera's flow limiter: credits, the waiting queue and each drop policy,
// and that every frame admitted is accounted for under random churn.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/base/flow_limiter.hpp"

namespace vlcache {
namespace {

TEST(flow_limiter, drop_oldest_keeps_the_newest_frames_waiting_in_order) {
  flow_limiter<int> f(2, 2, drop_policy::drop_oldest);
  EXPECT_EQ(f.admit(0), 0);
  EXPECT_EQ(f.admit(1), 1);
  for (int i = 2; i < 6; ++i) EXPECT_FALSE(f.admit(i)) << "no credit: frame " << i << " waits";
  EXPECT_EQ(f.dropped_oldest(), 2u) << "frames 2 and 3 made room for 4 and 5";
  EXPECT_EQ(f.waiting(), 2u);
  EXPECT_EQ(f.release(), 4) << "a credit back: the oldest waiting frame goes";
  EXPECT_EQ(f.release(), 5);
  EXPECT_EQ(f.in_flight(), 2u);
  EXPECT_FALSE(f.release());
  EXPECT_FALSE(f.release());
  EXPECT_TRUE(f.idle());
  EXPECT_TRUE(f.may_read()) << "only block stops the reader";
}

TEST(flow_limiter, drop_newest_never_queues) {
  flow_limiter<int> f(1, 5, drop_policy::drop_newest);
  EXPECT_EQ(f.admit(0), 0);
  EXPECT_FALSE(f.admit(1));
  EXPECT_FALSE(f.admit(2));
  EXPECT_EQ(f.dropped_newest(), 2u);
  EXPECT_EQ(f.waiting(), 0u);
  EXPECT_FALSE(f.release());
  EXPECT_EQ(f.admit(3), 3) << "the credit came back";
}

TEST(flow_limiter, block_stops_the_reader_until_a_credit_returns) {
  flow_limiter<int> f(2, 2, drop_policy::block);
  EXPECT_TRUE(f.may_read());
  EXPECT_EQ(f.admit(0), 0);
  EXPECT_EQ(f.admit(1), 1);
  EXPECT_FALSE(f.may_read());
  EXPECT_FALSE(f.release());
  EXPECT_TRUE(f.may_read());
  EXPECT_EQ(f.dropped_newest() + f.dropped_oldest(), 0u) << "a paused reader drops nothing";
}

TEST(flow_limiter, every_frame_is_dispatched_waiting_or_dropped_under_churn) {
  for (auto policy : {drop_policy::drop_oldest, drop_policy::drop_newest, drop_policy::block}) {
    std::mt19937 rng(7);
    flow_limiter<int> f(3, 2, policy);
    std::uint64_t admitted = 0, dispatched = 0, released = 0;
    int next = 0, last_dispatched = -1;
    for (int step = 0; step < 5000; ++step) {
      if (rng() % 2 && f.may_read()) {
        ++admitted;
        if (auto j = f.admit(next++)) {
          ++dispatched;
          EXPECT_GT(*j, last_dispatched) << "frames leave in order";
          last_dispatched = *j;
        }
      } else if (f.in_flight() > 0) {
        ++released;
        if (auto j = f.release()) {
          ++dispatched;
          EXPECT_GT(*j, last_dispatched);
          last_dispatched = *j;
        }
      }
      ASSERT_LE(f.in_flight(), 3u);
      ASSERT_LE(f.waiting(), 2u);
      ASSERT_EQ(admitted, dispatched + f.waiting() + f.dropped_newest() + f.dropped_oldest()) << to_string(policy);
      ASSERT_EQ(dispatched, released + f.in_flight());
    }
    if (policy == drop_policy::block) EXPECT_EQ(f.dropped_newest() + f.dropped_oldest(), 0u);
  }
}

}  // namespace
}  // namespace vlcache
