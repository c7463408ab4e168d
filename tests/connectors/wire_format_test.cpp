// The frame wire format: round trip, and every malformed message rejected
// with the field named.

#include <gtest/gtest.h>

#include <random>

#include "connectors/wire_format.hpp"

namespace vlcache::connectors {
namespace {

wire_frame sample() {
  wire_frame f;
  f.stream = "lobby";
  f.seq = 42;
  f.capture_ms = 4200.5;
  f.encoding = frame_encoding::raw_bgr;
  f.width = 4;
  f.height = 2;
  f.payload.assign(4 * 2 * 3, 7);
  return f;
}

TEST(wire_format, round_trips) {
  const auto bytes = encode_wire(sample());
  EXPECT_EQ(bytes.size(), 39u + 5 + 24);
  auto f = decode_wire(bytes.data(), bytes.size());
  ASSERT_TRUE(f) << f.err().message;
  EXPECT_EQ(f->stream, "lobby");
  EXPECT_EQ(f->seq, 42u);
  EXPECT_DOUBLE_EQ(f->capture_ms, 4200.5);
  EXPECT_EQ(f->width, 4u);
  EXPECT_EQ(f->payload, sample().payload);
}

void expect_rejected(std::vector<std::uint8_t> bytes, const std::string& needle) {
  auto f = decode_wire(bytes.data(), bytes.size());
  ASSERT_FALSE(f) << needle;
  EXPECT_NE(f.err().message.find(needle), std::string::npos) << f.err().message;
}

TEST(wire_format, rejects_malformed_messages_naming_the_field) {
  const auto good = encode_wire(sample());
  expect_rejected({good.begin(), good.begin() + 5}, "truncated");
  expect_rejected({good.begin(), good.begin() + 20}, "truncated");
  expect_rejected({good.begin(), good.end() - 1}, "payload length 24 but 23");
  auto b = good;
  b[0] = 'X';
  expect_rejected(b, "wrong magic");
  b = good;
  b[4] = 9;
  expect_rejected(b, "version 9");
  b = good;
  b[6] = 3;
  expect_rejected(b, "kind 3");
  b = good;
  b[7] = 5;
  expect_rejected(b, "encoding 5");
  auto f = sample();
  f.channels = 4;
  expect_rejected(encode_wire(f), "4 channels");
  f = sample();
  f.width = 5;
  expect_rejected(encode_wire(f), "raw payload of 24 bytes for 5x2x3");
  f = sample();
  f.height = 9000;
  expect_rejected(encode_wire(f), "size 4x9000");
  std::vector<std::uint8_t> huge(max_wire_bytes + 1, 0);
  expect_rejected(huge, "oversized");
}

TEST(wire_format, random_garbage_never_decodes_and_never_crashes) {
  std::mt19937 rng(9);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> junk(rng() % 200);
    for (auto& v : junk) v = static_cast<std::uint8_t>(rng());
    if (junk.size() >= 4 && i % 2) {  // half of them get past the magic
      const char m[] = "VLCF";
      for (std::size_t k = 0; k < 4; ++k) junk[k] = static_cast<std::uint8_t>(m[k]);
    }
    EXPECT_FALSE(decode_wire(junk.data(), junk.size()));
  }
}

}  // namespace
}  // namespace vlcache::connectors
