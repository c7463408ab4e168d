// Limits per peer: a token bucket per peer, message size, streams per peer.

#include <gtest/gtest.h>

#include "core/peer_limits.hpp"

namespace vlcache {
namespace {

peer_limits_config config(double per_s, double burst, int streams) {
  peer_limits_config c;
  c.max_per_s = per_s;
  c.burst = burst;
  c.max_streams = streams;
  c.max_message_bytes = 1000;
  return c;
}

TEST(peer_limits, a_burst_then_the_sustained_rate_and_peers_apart) {
  peer_limits l(config(10, 5, 0));
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += l.admit("a", "cam", 10, 0.0) == peer_verdict::admit;
  EXPECT_EQ(admitted, 5) << "the burst, all at once";
  EXPECT_EQ(l.admit("a", "cam", 10, 0.05), peer_verdict::too_fast) << "half a token back";
  EXPECT_EQ(l.admit("a", "cam", 10, 0.1), peer_verdict::admit) << "one token after 0.1 s at 10/s";
  EXPECT_EQ(l.admit("b", "other", 10, 0.1), peer_verdict::admit) << "another peer has its own bucket";
  // Over ten seconds at 20 messages a second, about 10 a second get through.
  admitted = 0;
  for (int i = 0; i < 200; ++i) admitted += l.admit("a", "cam", 10, 1.0 + i * 0.05) == peer_verdict::admit;
  EXPECT_NEAR(admitted, 100, 6);
}

TEST(peer_limits, size_and_streams_per_peer) {
  peer_limits l(config(0, 1, 2));
  EXPECT_EQ(l.admit("a", "s1", 1001, 0), peer_verdict::too_large);
  EXPECT_EQ(l.admit("a", "s1", 1000, 0), peer_verdict::admit);
  EXPECT_EQ(l.admit("a", "s2", 10, 0), peer_verdict::admit);
  EXPECT_EQ(l.admit("a", "s3", 10, 0), peer_verdict::too_many_streams);
  EXPECT_EQ(l.admit("a", "s1", 10, 0), peer_verdict::admit) << "its open streams go on";
  EXPECT_EQ(l.admit("b", "s3", 10, 0), peer_verdict::admit) << "another peer may open streams of its own";
  l.stream_closed("s2");
  EXPECT_EQ(l.admit("a", "s4", 10, 0), peer_verdict::admit) << "a closed stream frees its place";
  EXPECT_EQ(l.peers(), 2u);
}

}  // namespace
}  // namespace vlcache
