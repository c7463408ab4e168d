// Patch shipping: the payload round-trips, malformed payloads are refused
// by name, and the receiver's canvas equals the camera's frame while no
// message is lost, then refuses patches until a keyframe after a loss.

#include <gtest/gtest.h>

#include <random>

#include "connectors/patch_canvas.hpp"
#include "connectors/wire_format.hpp"

namespace vlcache::connectors {
namespace {

constexpr int size = 32, patch = 8, grid = (size / patch) * (size / patch);

std::vector<std::uint8_t> random_frame(std::mt19937& rng) {
  std::vector<std::uint8_t> f(size * size * 3);
  for (auto& v : f) v = static_cast<std::uint8_t>(rng() & 0xff);
  return f;
}

wire_frame message(const std::vector<std::uint8_t>& bgr, const std::vector<int>& positions, bool key,
                   std::uint32_t number) {
  wire_frame w;
  w.stream = "door";
  w.seq = number;
  w.encoding = frame_encoding::patches;
  w.width = w.height = size;
  w.payload = encode_patches(bgr.data(), size, patch, positions, key, number);
  auto bytes = encode_wire(w);
  auto back = decode_wire(bytes.data(), bytes.size());
  EXPECT_TRUE(back) << (back ? "" : back.err().message);
  return *back;
}

std::vector<int> all() {
  std::vector<int> p(grid);
  for (int i = 0; i < grid; ++i) p[i] = i;
  return p;
}

TEST(patch_canvas, follows_the_camera_while_nothing_is_lost) {
  std::mt19937 rng(3);
  auto frame = random_frame(rng);
  patch_canvas_set canvases;
  auto first = canvases.apply(message(frame, all(), true, 0));
  ASSERT_TRUE(first) << first.err().message;
  EXPECT_EQ(first->bgr, frame);
  // Change patches 5 and 9 only and ship just those.
  for (int p : {5, 9})
    for (int y = 0; y < patch; ++y)
      for (int x = 0; x < patch * 3; ++x)
        frame[((p / 4) * patch + y) * size * 3 + (p % 4) * patch * 3 + x] ^= 0x5a;
  auto second = canvases.apply(message(frame, {5, 9}, false, 1));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->bgr, frame);
  EXPECT_LT(message(frame, {5, 9}, false, 2).payload.size(), message(frame, all(), true, 2).payload.size() / 7);
}

TEST(patch_canvas, a_lost_message_waits_for_the_next_keyframe) {
  std::mt19937 rng(4);
  auto frame = random_frame(rng);
  patch_canvas_set canvases;
  auto before_key = canvases.apply(message(frame, {1}, false, 0));
  ASSERT_FALSE(before_key);
  EXPECT_NE(before_key.err().message.find("waiting for a keyframe"), std::string::npos);
  ASSERT_TRUE(canvases.apply(message(frame, all(), true, 1)));
  auto gap = canvases.apply(message(frame, {2}, false, 3));  // number 2 never arrived
  ASSERT_FALSE(gap);
  EXPECT_NE(gap.err().message.find("lost"), std::string::npos);
  EXPECT_FALSE(canvases.apply(message(frame, {2}, false, 4)));  // still stale
  auto key = canvases.apply(message(frame, all(), true, 5));
  ASSERT_TRUE(key);
  EXPECT_EQ(key->bgr, frame);
  EXPECT_TRUE(canvases.apply(message(frame, {3}, false, 6)));
}

TEST(patch_canvas, malformed_payloads_are_refused_by_name) {
  std::mt19937 rng(5);
  auto frame = random_frame(rng);
  auto bytes_of = [](wire_frame w) { return encode_wire(w); };
  wire_frame w = message(frame, {1, 2}, false, 0);
  auto check = [&](wire_frame bad, const std::string& needle) {
    auto bytes = bytes_of(bad);
    auto r = decode_wire(bytes.data(), bytes.size());
    ASSERT_FALSE(r) << needle;
    EXPECT_NE(r.err().message.find(needle), std::string::npos) << r.err().message;
  };
  auto truncated = w;
  truncated.payload.resize(truncated.payload.size() - 1);
  check(truncated, "bytes for 2 patches");
  auto outside = w;
  outside.payload[patch_header::bytes] = 200;  // the first patch's position
  check(outside, "outside the grid");
  auto odd = w;
  odd.width = odd.height = 30;
  check(odd, "does not divide");
  auto wide = w;
  wide.width = 64;
  check(wide, "square");
  auto partial_key = message(frame, {1, 2}, false, 0);
  partial_key.payload[2] = 1;  // claims to be a keyframe
  check(partial_key, "keyframe with 2");
}

}  // namespace
}  // namespace vlcache::connectors
