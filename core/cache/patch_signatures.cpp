#include "core/cache/patch_signatures.hpp"

#include "core/base/simd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace vlcache {
namespace {

/// Area-average weights that resample p pixels into n cells (n x p).
std::vector<float> area_matrix(int n, int p) {
  std::vector<float> m(static_cast<std::size_t>(n) * p, 0.0f);
  const double cell = static_cast<double>(p) / n;
  for (int i = 0; i < n; ++i) {
    const double lo = i * cell, hi = (i + 1) * cell;
    for (int j = 0; j < p; ++j) {
      const double overlap = std::min(hi, j + 1.0) - std::max(lo, static_cast<double>(j));
      if (overlap > 0) m[static_cast<std::size_t>(i) * p + j] = static_cast<float>(overlap / cell);
    }
  }
  return m;
}

/// The first n rows of the orthonormal DCT-II basis of length p (n x p).
std::vector<float> dct_matrix(int n, int p) {
  std::vector<float> m(static_cast<std::size_t>(n) * p);
  const double pi = 3.14159265358979323846;
  for (int u = 0; u < n; ++u) {
    const double norm = std::sqrt((u == 0 ? 1.0 : 2.0) / p);
    for (int x = 0; x < p; ++x)
      m[static_cast<std::size_t>(u) * p + x] =
          static_cast<float>(norm * std::cos(pi * (2 * x + 1) * u / (2.0 * p)));
  }
  return m;
}

using simd::load8;
using simd::store8;
using simd::v8f;

}  // namespace

float mean_abs_diff(const std::uint8_t* a, const std::uint8_t* b, std::size_t bytes) noexcept {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    sum += static_cast<std::uint32_t>(std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i])));
  return static_cast<float>(sum) / static_cast<float>(bytes);
}

float cell_mean_abs_diff(const std::uint8_t* a, const std::uint8_t* b, int patch, int cell) noexcept {
  if (cell <= 1) return mean_abs_diff(a, b, static_cast<std::size_t>(patch) * patch * 3);
  float total = 0.0f;
  int cells = 0;
  for (int y0 = 0; y0 < patch; y0 += cell) {
    const int y1 = std::min(patch, y0 + cell);
    for (int x0 = 0; x0 < patch; x0 += cell) {
      const int x1 = std::min(patch, x0 + cell);
      int diff[3] = {0, 0, 0};  // per channel: sum of a minus sum of b over the cell
      for (int y = y0; y < y1; ++y) {
        const std::size_t row = static_cast<std::size_t>(y) * patch * 3;
        for (int x = x0; x < x1; ++x)
          for (int c = 0; c < 3; ++c) {
            const std::size_t i = row + static_cast<std::size_t>(x) * 3 + c;
            diff[c] += static_cast<int>(a[i]) - static_cast<int>(b[i]);
          }
      }
      const float n = static_cast<float>((y1 - y0) * (x1 - x0));
      total += (std::abs(diff[0]) + std::abs(diff[1]) + std::abs(diff[2])) / n;
      cells += 3;
    }
  }
  return total / static_cast<float>(cells);
}

float patch_noise_sigma(const std::uint8_t* rgb, int patch) noexcept {
  if (patch < 3) return 0.0f;
  const int stride = patch * 3;
  long sum = 0;
  for (int y = 1; y + 1 < patch; ++y) {
    const std::uint8_t* up = rgb + static_cast<std::size_t>(y - 1) * stride;
    const std::uint8_t* mid = up + stride;
    const std::uint8_t* down = mid + stride;
    for (int i = 3; i < stride - 3; ++i) {
      // [1 -2 1; -2 4 -2; 1 -2 1]
      const int v = up[i - 3] - 2 * up[i] + up[i + 3] - 2 * mid[i - 3] + 4 * mid[i] -
                    2 * mid[i + 3] + down[i - 3] - 2 * down[i] + down[i + 3];
      sum += std::abs(v);
    }
  }
  const double count = static_cast<double>(patch - 2) * (patch - 2) * 3;
  // E|mask * noise| = 6 sigma sqrt(2/pi) for white noise of deviation sigma.
  return static_cast<float>(std::sqrt(M_PI / 2.0) / 6.0 * static_cast<double>(sum) / count);
}

signature_engine::signature_engine(const patch_grid& grid, bool estimate_noise)
    : grid_(grid), estimate_noise_(estimate_noise) {
  const int p = grid.patch_size;
  area8_ = area_matrix(8, p);
  dct8_ = dct_matrix(8, p);
  const std::vector<float> area9 = area_matrix(9, p);
  row_basis_.assign(static_cast<std::size_t>(p) * width, 0.0f);
  for (int j = 0; j < p; ++j) {
    float* r = &row_basis_[static_cast<std::size_t>(j) * width];
    for (int k = 0; k < 8; ++k) r[k] = area8_[static_cast<std::size_t>(k) * p + j];
    for (int k = 0; k < 9; ++k) r[8 + k] = area9[static_cast<std::size_t>(k) * p + j];
    for (int k = 0; k < 8; ++k) r[24 + k] = dct8_[static_cast<std::size_t>(k) * p + j];
  }
}

expected<signature_engine> signature_engine::make(const patch_grid& grid, bool estimate_noise) {
  auto checked = patch_grid::make(grid.image_size, grid.patch_size);
  if (!checked) return checked.err();
  return signature_engine(*checked, estimate_noise);
}

expected<frame_signatures> signature_engine::compute(const image_view& image) const {
  frame_signatures out;
  if (auto st = compute(image, out); !st) return st.err();
  return out;
}

status signature_engine::compute(const image_view& image, frame_signatures& out) const {
  if (auto st = validate_frame(image); !st) return st;
  if (image.width != grid_.image_size || image.height != grid_.image_size)
    return error{errc::invalid_image,
                 "frame is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                     " but the patch grid expects " + std::to_string(grid_.image_size) + "x" +
                     std::to_string(grid_.image_size) + " (patch " +
                     std::to_string(grid_.patch_size) + ")"};
  const bool bgr = image.order == channel_order::bgr;
  const int p = grid_.patch_size, side = grid_.side(), size = grid_.image_size;
  const int n = grid_.count();

  out.grid = grid_;
  out.ahash.resize(n);
  out.dhash.resize(n);
  out.phash.resize(n);
  out.patches.resize(out.patch_bytes() * n);

  // Per band of patches: luma rows, then the vertical pass over the whole
  // band width (16 rows: 8 area cells, 8 DCT frequencies), then a short
  // horizontal pass per patch. Both passes run along contiguous memory.
  const int padded = (size + 15) / 16 * 16;  // row length, zero tail
  std::vector<float> luma(static_cast<std::size_t>(p) * padded, 0.0f);
  std::vector<float> vert(static_cast<std::size_t>(16) * padded);
  const float wr = bgr ? 0.114f : 0.299f, wb = bgr ? 0.299f : 0.114f, wg = 0.587f;

  for (int band = 0; band < side; ++band) {
    for (int dy = 0; dy < p; ++dy) {
      const int y = band * p + dy;
      const std::uint8_t* src = image.row(y);
      float* l = &luma[static_cast<std::size_t>(dy) * padded];
      for (int x = 0; x < size; ++x)
        l[x] = wr * src[3 * x] + wg * src[3 * x + 1] + wb * src[3 * x + 2];
      // Raw patch copy, always stored as RGB.
      for (int pc = 0; pc < side; ++pc) {
        std::uint8_t* dst = out.patches.data() + out.patch_bytes() * (band * side + pc) +
                            static_cast<std::size_t>(dy) * p * 3;
        const std::uint8_t* s = src + static_cast<std::size_t>(pc) * p * 3;
        if (!bgr) {
          std::copy(s, s + p * 3, dst);
        } else {
          for (int x = 0; x < p; ++x) {
            dst[3 * x] = s[3 * x + 2];
            dst[3 * x + 1] = s[3 * x + 1];
            dst[3 * x + 2] = s[3 * x];
          }
        }
      }
    }

    // Eight output rows by 8 columns at a time: independent running sums
    // that stay in registers and share each luma load.
    for (int group = 0; group < 2; ++group) {
      const float* w = group == 0 ? area8_.data() : dct8_.data();  // 8 x p
      for (int x0 = 0; x0 < padded; x0 += 8) {
        v8f sum[8] = {};
        for (int dy = 0; dy < p; ++dy) {
          const v8f l = load8(&luma[static_cast<std::size_t>(dy) * padded + x0]);
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) sum[i] += w[i * p + dy] * l;
        }
        for (int i = 0; i < 8; ++i)
          store8(&vert[static_cast<std::size_t>(group * 8 + i) * padded + x0], sum[i]);
      }
    }

    for (int pc = 0; pc < side; ++pc) {
      // Rows 0..7: area cells (columns 0..7 aHash, 8..16 dHash);
      // rows 8..15: DCT coefficients [vertical][horizontal] in columns 24..31.
      // Area rows need the basis columns 0..23, DCT rows only 24..31.
      float acc[16][width];
      for (int i0 = 0; i0 < 8; i0 += 2) {
        v8f sum[2][3] = {};
        const float* v = &vert[static_cast<std::size_t>(i0) * padded + static_cast<std::size_t>(pc) * p];
        for (int j = 0; j < p; ++j) {
          const float* basis = &row_basis_[static_cast<std::size_t>(j) * width];
#pragma GCC unroll 3
          for (int k = 0; k < 3; ++k) {
            const v8f b = load8(basis + 8 * k);
            sum[0][k] += v[j] * b;
            sum[1][k] += v[padded + j] * b;
          }
        }
        for (int i = 0; i < 2; ++i)
          for (int k = 0; k < 3; ++k) store8(&acc[i0 + i][8 * k], sum[i][k]);
      }
      {
        v8f sum[8] = {};
        const float* v = &vert[static_cast<std::size_t>(8) * padded + static_cast<std::size_t>(pc) * p];
        for (int j = 0; j < p; ++j) {
          const v8f b = load8(&row_basis_[static_cast<std::size_t>(j) * width + 24]);
#pragma GCC unroll 8
          for (int i = 0; i < 8; ++i) sum[i] += v[i * padded + j] * b;
        }
        for (int i = 0; i < 8; ++i) store8(&acc[8 + i][24], sum[i]);
      }
      float mean = 0.0f;
      for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 8; ++k) mean += acc[i][k];
      mean /= 64.0f;
      // pHash threshold: the mean of the 63 AC coefficients (OpenCV's
      // img_hash takes the mean too; leaving DC out keeps it blind to
      // brightness shifts). A median would cost more than the rest here.
      float ac_mean = 0.0f;
      for (int i = 0; i < 8; ++i)
        for (int k = 0; k < 8; ++k) ac_mean += acc[8 + i][24 + k];
      ac_mean = (ac_mean - acc[8][24]) / 63.0f;
      std::uint64_t ah = 0, dh = 0, ph = 0;
      for (int i = 0; i < 8; ++i) {
        for (int k = 0; k < 8; ++k) {
          const int bit = i * 8 + k;
          ah |= static_cast<std::uint64_t>(acc[i][k] > mean) << bit;
          dh |= static_cast<std::uint64_t>(acc[i][8 + k] > acc[i][9 + k]) << bit;
          if (bit != 0) ph |= static_cast<std::uint64_t>(acc[8 + i][24 + k] > ac_mean) << bit;
        }
      }
      const int pos = band * side + pc;
      out.ahash[pos] = ah;
      out.dhash[pos] = dh;
      out.phash[pos] = ph;
    }
  }
  out.noise_sigma = -1.0f;
  if (!estimate_noise_) return {};
  std::vector<float> sigma(static_cast<std::size_t>(n));
  for (int pos = 0; pos < n; ++pos) sigma[pos] = patch_noise_sigma(out.patch(pos), p);
  auto quartile = sigma.begin() + static_cast<std::ptrdiff_t>(sigma.size() / 4);
  std::nth_element(sigma.begin(), quartile, sigma.end());
  out.noise_sigma = *quartile;
  return {};
}

}  // namespace vlcache
