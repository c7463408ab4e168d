// CLIP preprocessing against reference outputs of Hugging Face's processor
// (tests/fixtures/make_preprocess_reference.py, Pillow + NumPy).
//
// Tolerance: 1e-6 absolute on the normalised floats. The resize reproduces
// Pillow's integer arithmetic, so every 8-bit pixel must be identical; a
// one-level difference would show as an error of ~0.015.

#include <gtest/gtest.h>

#include <cmath>

#include "core/base/preprocess.hpp"
#include "support/npy.hpp"

namespace vlcache {
namespace {

struct reference_case {
  const char* name;
  int shortest_edge, crop;
  bool pad;
};

class preprocess_reference : public ::testing::TestWithParam<reference_case> {};

TEST_P(preprocess_reference, matches_hugging_face_processor) {
  const auto& c = GetParam();
  const std::string dir = std::string(VLCACHE_FIXTURES) + "/preprocess/";
  const auto input = test::read_npy(dir + c.name + ".input.npy");
  const auto expected = test::read_npy(dir + c.name + ".expected.npy");
  ASSERT_EQ(input.shape.size(), 3u);
  ASSERT_EQ(expected.shape, (std::vector<std::size_t>{3, std::size_t(c.crop), std::size_t(c.crop)}));

  preprocess_config cfg = preprocess_config::clip(c.crop, c.pad);
  cfg.shortest_edge = c.shortest_edge;
  const image_view view{input.bytes.data(), int(input.shape[1]), int(input.shape[0]), 3, 1, 0,
                        channel_order::rgb};
  auto out = preprocess(view, cfg);
  ASSERT_TRUE(out) << out.err().message;
  const auto want = expected.as<float>();
  ASSERT_EQ(out->pixels.size(), want.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(out->pixels[i] - want[i])));
  EXPECT_LE(worst, 1e-6) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    fixtures, preprocess_reference,
    ::testing::Values(reference_case{"downscale_landscape_224", 224, 224, false},
                      reference_case{"upscale_landscape_96", 96, 96, false},
                      reference_case{"downscale_portrait_64", 64, 64, false},
                      reference_case{"pad_to_square_portrait_64", 64, 64, true},
                      reference_case{"pad_to_square_landscape_56", 56, 56, true}),
    [](const auto& info) { return std::string(info.param.name); });

std::vector<std::uint8_t> pattern(int w, int h) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint8_t>((i * 37) % 251);
  return px;
}

TEST(preprocess, bgr_input_equals_rgb_input) {
  auto rgb = pattern(50, 40);
  auto bgr = rgb;
  for (std::size_t i = 0; i < bgr.size(); i += 3) std::swap(bgr[i], bgr[i + 2]);
  const auto cfg = preprocess_config::clip(32);
  auto a = preprocess(image_view{rgb.data(), 50, 40, 3, 1, 0, channel_order::rgb}, cfg);
  auto b = preprocess(image_view{bgr.data(), 50, 40, 3, 1, 0, channel_order::bgr}, cfg);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rgb, b->rgb);
  EXPECT_EQ(a->pixels, b->pixels);
}

TEST(preprocess, honours_row_stride) {
  auto packed = pattern(20, 10);
  std::vector<std::uint8_t> strided(static_cast<std::size_t>(64) * 10, 7);
  for (int y = 0; y < 10; ++y)
    std::copy(packed.begin() + y * 60, packed.begin() + (y + 1) * 60, strided.begin() + y * 64);
  const auto cfg = preprocess_config::clip(16);
  auto a = preprocess(image_view{packed.data(), 20, 10, 3, 1, 0, channel_order::rgb}, cfg);
  auto b = preprocess(image_view{strided.data(), 20, 10, 3, 1, 64, channel_order::rgb}, cfg);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rgb, b->rgb);
}

void expect_error(const image_view& v, const std::string& needle) {
  auto out = preprocess(v, preprocess_config::clip(32));
  ASSERT_FALSE(out);
  EXPECT_EQ(out.err().code, errc::invalid_image);
  EXPECT_NE(out.err().message.find(needle), std::string::npos) << out.err().message;
}

TEST(preprocess, rejects_bad_frames_with_named_reason) {
  auto px = pattern(8, 8);
  expect_error(image_view{nullptr, 8, 8, 3, 1, 0, channel_order::rgb}, "empty frame");
  expect_error(image_view{px.data(), 0, 8, 3, 1, 0, channel_order::rgb}, "empty frame");
  expect_error(image_view{px.data(), 8, 8, 4, 1, 0, channel_order::rgb}, "4 channels");
  expect_error(image_view{px.data(), 8, 8, 1, 1, 0, channel_order::rgb}, "1 channels");
  expect_error(image_view{px.data(), 4, 4, 3, 2, 0, channel_order::rgb}, "16-bit");
  expect_error(image_view{px.data(), 8, 8, 3, 1, 10, channel_order::rgb}, "stride");
}

TEST(preprocess, rejects_bad_config) {
  auto px = pattern(8, 8);
  auto cfg = preprocess_config::clip(32);
  cfg.shortest_edge = 16;
  auto out = preprocess(image_view{px.data(), 8, 8, 3, 1, 0, channel_order::rgb}, cfg);
  ASSERT_FALSE(out);
  EXPECT_NE(out.err().message.find("shortest_edge"), std::string::npos);
}

}  // namespace
}  // namespace vlcache

namespace vlcache {
namespace {

// Patch shipping relies on it: a frame already at the encoder's input size
// passes through preprocessing unchanged (Pillow's bicubic at scale 1).
TEST(preprocess, a_frame_at_the_input_size_is_left_as_it_is) {
  const int s = 48;
  std::vector<std::uint8_t> rgb(s * s * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>((i * 37 + i / 7) & 0xff);
  auto out = preprocess(image_view{rgb.data(), s, s, 3, 1, 0, channel_order::rgb}, preprocess_config::clip(s));
  ASSERT_TRUE(out) << out.err().message;
  EXPECT_EQ(out->rgb, rgb);
}

}  // namespace
}  // namespace vlcache
