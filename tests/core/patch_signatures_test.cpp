// Signature invariants, a naive double-precision reference of each hash, and
// bad input.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/cache/patch_signatures.hpp"

namespace vlcache {
namespace {

struct test_frame {
  int size;
  std::vector<std::uint8_t> px;
  image_view view(channel_order order = channel_order::rgb) const {
    return image_view{px.data(), size, size, 3, 1, 0, order};
  }
  std::uint8_t& at(int x, int y, int c) { return px[(static_cast<std::size_t>(y) * size + x) * 3 + c]; }
};

/// Textured content in [40, 200]: room for a brightness shift without clipping.
test_frame textured(int size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(40, 200);
  test_frame f{size, std::vector<std::uint8_t>(static_cast<std::size_t>(size) * size * 3)};
  for (auto& v : f.px) v = static_cast<std::uint8_t>(d(rng));
  return f;
}

signature_engine engine_for(int size, int patch) {
  auto e = signature_engine::make(*patch_grid::make(size, patch));
  EXPECT_TRUE(e);
  return std::move(*e);
}

// Naive reference: luma in double, area averages and DCT sums written out.
struct naive_hashes {
  std::uint64_t a = 0, d = 0, p = 0;
};

naive_hashes naive(const test_frame& f, int patch, int pos) {
  const int side = f.size / patch, r = pos / side, c = pos % side;
  std::vector<double> y(static_cast<std::size_t>(patch) * patch);
  for (int j = 0; j < patch; ++j)
    for (int i = 0; i < patch; ++i) {
      const auto* px = &f.px[((static_cast<std::size_t>(r) * patch + j) * f.size + c * patch + i) * 3];
      y[j * patch + i] = 0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2];
    }
  auto overlap = [](double lo, double hi, int px) {
    return std::max(0.0, std::min(hi, px + 1.0) - std::max(lo, double(px)));
  };
  auto cell = [&](int rows, int cols, int ri, int ci) {
    const double h = double(patch) / rows, w = double(patch) / cols;
    double s = 0;
    for (int j = 0; j < patch; ++j)
      for (int i = 0; i < patch; ++i)
        s += overlap(ri * h, (ri + 1) * h, j) * overlap(ci * w, (ci + 1) * w, i) * y[j * patch + i];
    return s / (h * w);
  };
  naive_hashes out;
  double mean = 0, a[8][8], d[8][9], dct[8][8];
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 8; ++k) mean += (a[i][k] = cell(8, 8, i, k)) / 64;
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 9; ++k) d[i][k] = cell(8, 9, i, k);
  const double pi = std::acos(-1.0);
  double ac_mean = 0;
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v) {
      double s = 0;
      for (int j = 0; j < patch; ++j)
        for (int i = 0; i < patch; ++i)
          s += std::cos(pi * (2 * j + 1) * u / (2.0 * patch)) *
               std::cos(pi * (2 * i + 1) * v / (2.0 * patch)) * y[j * patch + i];
      dct[u][v] = s * std::sqrt((u ? 2.0 : 1.0) / patch) * std::sqrt((v ? 2.0 : 1.0) / patch);
      if (u || v) ac_mean += dct[u][v] / 63;
    }
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 8; ++k) {
      const int bit = i * 8 + k;
      out.a |= std::uint64_t(a[i][k] > mean) << bit;
      out.d |= std::uint64_t(d[i][k] > d[i][k + 1]) << bit;
      if (bit) out.p |= std::uint64_t(dct[i][k] > ac_mean) << bit;
    }
  return out;
}

class signature_grids : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(signature_grids, agree_with_naive_reference) {
  const auto [size, patch] = GetParam();
  const auto f = textured(size, 11);
  auto sigs = engine_for(size, patch).compute(f.view());
  ASSERT_TRUE(sigs);
  // Float rounding may flip a bit whose two sides are within ~1e-5 of each
  // other; textured patches have no such ties, so demand near-exact agreement.
  int differing_bits = 0;
  for (int pos = 0; pos < sigs->grid.count(); ++pos) {
    const auto ref = naive(f, patch, pos);
    differing_bits += hamming(ref.a, sigs->ahash[pos]) + hamming(ref.d, sigs->dhash[pos]) +
                      hamming(ref.p, sigs->phash[pos]);
  }
  EXPECT_LE(differing_bits, 2) << "of " << 3 * 64 * sigs->grid.count();
}

TEST_P(signature_grids, identical_patch_has_distance_zero_and_changed_patch_is_far) {
  const auto [size, patch] = GetParam();
  auto engine = engine_for(size, patch);
  auto f = textured(size, 1);
  auto a = *engine.compute(f.view());
  auto same = *engine.compute(f.view());
  // Replace one patch (position 5) with different content.
  auto g = f;
  const auto other = textured(size, 2);
  const int side = size / patch, pos = 5, r = pos / side, c = pos % side;
  for (int y = 0; y < patch; ++y)
    for (int x = 0; x < patch; ++x)
      for (int ch = 0; ch < 3; ++ch) g.at(c * patch + x, r * patch + y, ch) = other.px[(y * size + x) * 3 + ch];
  auto b = *engine.compute(g.view());
  for (int p = 0; p < a.grid.count(); ++p) {
    EXPECT_EQ(hamming(a.ahash[p], same.ahash[p]), 0);
    EXPECT_EQ(hamming(a.dhash[p], same.dhash[p]), 0);
    EXPECT_EQ(hamming(a.phash[p], same.phash[p]), 0);
    EXPECT_EQ(mean_abs_diff(a.patch(p), same.patch(p), a.patch_bytes()), 0.0f);
    if (p == pos) continue;
    EXPECT_EQ(a.ahash[p], b.ahash[p]) << "an untouched patch changed signature";
    EXPECT_EQ(mean_abs_diff(a.patch(p), b.patch(p), a.patch_bytes()), 0.0f);
  }
  // Independent random textures: about half the bits differ.
  EXPECT_GT(hamming(a.ahash[pos], b.ahash[pos]), 12);
  EXPECT_GT(hamming(a.dhash[pos], b.dhash[pos]), 12);
  EXPECT_GT(hamming(a.phash[pos], b.phash[pos]), 12);
  EXPECT_GT(mean_abs_diff(a.patch(pos), b.patch(pos), a.patch_bytes()), 20.0f);
}

// Documented behaviour: the three hashes compare a patch with itself, so a
// uniform brightness shift without clipping leaves them unchanged; the MAD
// gate sees the shift at its full size. A gate that must notice lighting
// changes therefore needs the MAD signature.
TEST_P(signature_grids, uniform_brightness_shift_is_invisible_to_hashes_but_not_to_mad) {
  const auto [size, patch] = GetParam();
  auto engine = engine_for(size, patch);
  auto f = textured(size, 3);
  auto g = f;
  for (auto& v : g.px) v = static_cast<std::uint8_t>(v + 30);
  auto a = *engine.compute(f.view());
  auto b = *engine.compute(g.view());
  int bits = 0;
  for (int p = 0; p < a.grid.count(); ++p) {
    bits += hamming(a.ahash[p], b.ahash[p]) + hamming(a.dhash[p], b.dhash[p]) +
            hamming(a.phash[p], b.phash[p]);
    EXPECT_FLOAT_EQ(mean_abs_diff(a.patch(p), b.patch(p), a.patch_bytes()), 30.0f);
  }
  EXPECT_LE(bits, 2) << "hashes should ignore a uniform shift (float ties aside)";
}

INSTANTIATE_TEST_SUITE_P(grids, signature_grids,
                         ::testing::Values(std::make_pair(336, 14), std::make_pair(224, 16),
                                           std::make_pair(64, 8)),
                         [](const auto& i) {
                           return std::to_string(i.param.first) + "_" + std::to_string(i.param.second);
                         });

TEST(signatures, bgr_frame_equals_rgb_frame) {
  auto engine = engine_for(64, 16);
  auto f = textured(64, 4);
  auto g = f;
  for (std::size_t i = 0; i < g.px.size(); i += 3) std::swap(g.px[i], g.px[i + 2]);
  auto a = *engine.compute(f.view(channel_order::rgb));
  auto b = *engine.compute(g.view(channel_order::bgr));
  EXPECT_EQ(a.ahash, b.ahash);
  EXPECT_EQ(a.dhash, b.dhash);
  EXPECT_EQ(a.phash, b.phash);
  EXPECT_EQ(a.patches, b.patches);
}

TEST(signatures, rejects_frame_of_wrong_size_and_leaves_output_untouched) {
  auto engine = engine_for(224, 16);
  auto ok = textured(224, 5);
  frame_signatures out;
  ASSERT_TRUE(engine.compute(ok.view(), out));
  const auto before = out.ahash;
  auto wrong = textured(336, 5);
  auto st = engine.compute(wrong.view(), out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.err().code, errc::invalid_image);
  EXPECT_NE(st.err().message.find("336x336"), std::string::npos) << st.err().message;
  EXPECT_NE(st.err().message.find("224x224"), std::string::npos) << st.err().message;
  EXPECT_EQ(out.ahash, before);
}

TEST(signatures, rejects_wrong_channels_depth_and_empty_frames) {
  auto engine = engine_for(64, 16);
  auto f = textured(64, 6);
  frame_signatures out;
  auto v = f.view();
  v.channels = 4;
  EXPECT_NE(engine.compute(v, out).err().message.find("4 channels"), std::string::npos);
  v = f.view();
  v.bytes_per_channel = 2;
  EXPECT_NE(engine.compute(v, out).err().message.find("16-bit"), std::string::npos);
  v = f.view();
  v.data = nullptr;
  EXPECT_NE(engine.compute(v, out).err().message.find("empty frame"), std::string::npos);
  EXPECT_TRUE(out.ahash.empty());
}

TEST(signatures, grid_must_divide_the_image) {
  auto bad = patch_grid::make(225, 16);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("not a multiple of patch size 16"), std::string::npos);
  EXPECT_FALSE(patch_grid::make(224, 1));
}

// The denoised MAD: cell means, then their mean absolute difference.
std::vector<std::uint8_t> noisy_patch(int side, int level, double sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  std::vector<std::uint8_t> p(static_cast<std::size_t>(side) * side * 3);
  for (auto& v : p) v = static_cast<std::uint8_t>(std::clamp(level + noise(rng), 0.0, 255.0) + 0.5);
  return p;
}

TEST(cell_mean_abs_diff, cell_one_is_the_raw_mad_and_a_uniform_shift_keeps_its_size) {
  const auto a = noisy_patch(16, 100, 8.0, 1), b = noisy_patch(16, 100, 8.0, 2);
  EXPECT_FLOAT_EQ(cell_mean_abs_diff(a.data(), b.data(), 16, 1), mean_abs_diff(a.data(), b.data(), a.size()));
  auto shifted = a;
  for (auto& v : shifted) v = static_cast<std::uint8_t>(std::min(255, v + 10));
  for (int cell : {1, 2, 4, 8, 16}) EXPECT_NEAR(cell_mean_abs_diff(a.data(), shifted.data(), 16, cell), 10.0, 0.2) << cell;
  // 14-pixel patches with 4-pixel cells: the last cells are 2 pixels wide.
  const auto c = noisy_patch(14, 60, 3.0, 3);
  auto d = c;
  for (auto& v : d) v = static_cast<std::uint8_t>(v + 7);
  EXPECT_NEAR(cell_mean_abs_diff(c.data(), d.data(), 14, 4), 7.0, 1e-4);
}

TEST(cell_mean_abs_diff, averaging_shrinks_independent_noise_by_the_cell_side_but_not_a_whole_cell_change) {
  const auto a = noisy_patch(16, 120, 6.0, 4), b = noisy_patch(16, 120, 6.0, 5);
  const float raw = cell_mean_abs_diff(a.data(), b.data(), 16, 1);
  const float cells = cell_mean_abs_diff(a.data(), b.data(), 16, 4);
  EXPECT_NEAR(raw, 2.0 * 6.0 / std::sqrt(M_PI), 0.6);  // E|x - y| of two N(0, 6)
  EXPECT_LT(cells, raw / 3.0f);
  // An object over the top-left 8x8 pixels (a quarter) raised by 40 levels.
  auto object = a;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8 * 3; ++x) object[static_cast<std::size_t>(y) * 48 + x] = 200;
  const float change = cell_mean_abs_diff(a.data(), object.data(), 16, 4);
  EXPECT_NEAR(change, 0.25 * 80.0, 1.5);
}

TEST(patch_noise_sigma, measures_white_noise_and_ignores_smooth_content) {
  for (double sigma : {2.0, 5.0, 12.0}) {
    const auto p = noisy_patch(16, 128, sigma, 7);
    EXPECT_NEAR(patch_noise_sigma(p.data(), 16), sigma, 0.15 * sigma) << sigma;
  }
  // A clean linear ramp plus a quadratic bowl: the mask cancels both.
  std::vector<std::uint8_t> ramp(16 * 16 * 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) ramp[(y * 16 + x) * 3 + c] = static_cast<std::uint8_t>(20 + 5 * x + 3 * y + c);
  EXPECT_FLOAT_EQ(patch_noise_sigma(ramp.data(), 16), 0.0f);
}

}  // namespace
}  // namespace vlcache
