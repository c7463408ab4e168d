// Limits per peer: a token bucket per peer, message size, streams per peer,
// streams owned by the peer that opened them, allow-list entries.

#include <gtest/gtest.h>

#include "connectors/peer_limits.hpp"

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

/// A message for `stream` as the ingest handles it: rate, then the stream.
peer_verdict send(peer_limits& l, const std::string& peer, const std::string& stream, std::uint64_t bytes, double t) {
  if (auto v = l.admit_message(peer, bytes, t); v != peer_verdict::admit) return v;
  if (auto v = l.may_use(peer, stream); v != peer_verdict::admit) return v;
  if (l.owner(stream).empty()) l.open(peer, stream);
  return peer_verdict::admit;
}

TEST(peer_limits, a_burst_then_the_sustained_rate_and_peers_apart) {
  peer_limits l(config(10, 5, 0));
  int admitted = 0;
  for (int i = 0; i < 20; ++i) admitted += send(l, "a", "cam", 10, 0.0) == peer_verdict::admit;
  EXPECT_EQ(admitted, 5) << "the burst, all at once";
  EXPECT_EQ(send(l, "a", "cam", 10, 0.05), peer_verdict::too_fast) << "half a token back";
  EXPECT_EQ(send(l, "a", "cam", 10, 0.1), peer_verdict::admit) << "one token after 0.1 s at 10/s";
  EXPECT_EQ(send(l, "b", "other", 10, 0.1), peer_verdict::admit) << "another peer has its own bucket";
  // Over ten seconds at 20 messages a second, about 10 a second get through.
  admitted = 0;
  for (int i = 0; i < 200; ++i) admitted += send(l, "a", "cam", 10, 1.0 + i * 0.05) == peer_verdict::admit;
  EXPECT_NEAR(admitted, 100, 6);
}

TEST(peer_limits, size_and_streams_per_peer) {
  peer_limits l(config(0, 1, 2));
  EXPECT_EQ(send(l, "a", "s1", 1001, 0), peer_verdict::too_large);
  EXPECT_EQ(send(l, "a", "s1", 1000, 0), peer_verdict::admit);
  EXPECT_EQ(send(l, "a", "s2", 10, 0), peer_verdict::admit);
  EXPECT_EQ(send(l, "a", "s3", 10, 0), peer_verdict::too_many_streams);
  EXPECT_EQ(send(l, "a", "s1", 10, 0), peer_verdict::admit) << "its open streams go on";
  EXPECT_EQ(send(l, "b", "s3", 10, 0), peer_verdict::admit) << "another peer may open streams of its own";
  l.stream_closed("s2");
  EXPECT_EQ(send(l, "a", "s4", 10, 0), peer_verdict::admit) << "a closed stream frees its place";
  EXPECT_EQ(l.peers(), 2u);
}

TEST(peer_limits, a_stream_belongs_to_the_peer_that_opened_it_until_it_closes) {
  peer_limits l(config(0, 1, 4));
  EXPECT_EQ(send(l, "camera-a", "a", 10, 0), peer_verdict::admit);
  EXPECT_EQ(send(l, "camera-b", "a", 10, 0), peer_verdict::not_owner) << "B writes into A's stream";
  EXPECT_EQ(l.owner("a"), "camera-a");
  l.stream_closed("a");
  EXPECT_EQ(send(l, "camera-b", "a", 10, 0), peer_verdict::admit) << "closed: free to open";
}

TEST(peer_limits, asking_registers_nothing_so_a_refused_frame_holds_no_slot) {
  peer_limits l(config(0, 1, 1));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(l.may_use("host", "bad" + std::to_string(i)), peer_verdict::admit);
  EXPECT_EQ(send(l, "host", "good", 10, 0), peer_verdict::admit) << "16 frames that never decoded took no slot";
}

TEST(peer_limits, an_allow_list_entry_names_the_streams_a_key_may_open) {
  auto c = config(0, 1, 0);
  c.allowed_streams["key-a"] = {"gate", "hall"};
  peer_limits l(c);
  EXPECT_EQ(send(l, "key-a", "gate", 10, 0), peer_verdict::admit);
  EXPECT_EQ(send(l, "key-a", "yard", 10, 0), peer_verdict::not_allowed);
  EXPECT_EQ(send(l, "key-b", "yard", 10, 0), peer_verdict::admit) << "a key with no list may open any";
}

}  // namespace
}  // namespace vlcache
