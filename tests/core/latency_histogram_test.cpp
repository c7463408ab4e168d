#include <gtest/gtest.h>

#include "core/base/latency_histogram.hpp"

namespace vlcache {
namespace {

TEST(latency_histogram, buckets_are_cumulative_and_memory_is_bounded) {
  latency_histogram h;
  for (int i = 0; i < 100000; ++i) h.add(i % 2 == 0 ? 3.0 : 700.0);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_DOUBLE_EQ(h.sum(), 50000 * 3.0 + 50000 * 700.0);
  EXPECT_EQ(h.bucket(0), 0u);       // <= 1 ms
  EXPECT_EQ(h.bucket(2), 50000u);   // <= 5 ms
  EXPECT_EQ(h.bucket(8), 50000u);   // <= 500 ms
  EXPECT_EQ(h.bucket(9), 100000u);  // <= 1000 ms
  EXPECT_EQ(h.recent().size(), latency_histogram::recent_capacity);
}

TEST(latency_histogram, quantiles_follow_the_recent_samples) {
  latency_histogram h;
  for (int i = 0; i < 5000; ++i) h.add(100.0);
  for (std::size_t i = 0; i < latency_histogram::recent_capacity; ++i) h.add(2.0);
  EXPECT_DOUBLE_EQ(h.recent_quantile(0.95), 2.0);  // the old slow period has left the window
  EXPECT_EQ(h.bucket(1), latency_histogram::recent_capacity);  // but the counts keep it
}

}  // namespace
}  // namespace vlcache
