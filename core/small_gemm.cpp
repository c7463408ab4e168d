#include "core/small_gemm.hpp"

#include "core/detail_simd.hpp"

#include <algorithm>
#include <cstring>

namespace vlcache {
namespace {

using simd::load8;
using simd::store8;
using simd::v8f;

/// ROWS (<= 6) rows of x against one 16-column panel: the classic 6 x 16
/// register tile of AVX2 (12 sums, 2 weight vectors, 1 broadcast).
/// `next`, when set, is the panel that follows: one cache line of it is
/// prefetched per step, so its weights stream in while this one computes
/// (with few rows the product is otherwise bound by the wait for weights).
template <int ROWS>
void kernel(const float* x, int k, const float* panel, const float* bias, float* y, int ldy, int cols,
            const float* next) {
  v8f acc[ROWS][2];
  const v8f b0 = load8(bias), b1 = load8(bias + 8);
  for (int i = 0; i < ROWS; ++i) {
    acc[i][0] = b0;
    acc[i][1] = b1;
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* w = panel + static_cast<std::size_t>(kk) * packed_weight::panel_width;
    if (next != nullptr) __builtin_prefetch(next + static_cast<std::size_t>(kk) * packed_weight::panel_width);
    const v8f w0 = load8(w), w1 = load8(w + 8);
#pragma GCC unroll 6
    for (int i = 0; i < ROWS; ++i) {
      const float xi = x[static_cast<std::size_t>(i) * k + kk];
      acc[i][0] += xi * w0;
      acc[i][1] += xi * w1;
    }
  }
  for (int i = 0; i < ROWS; ++i) {
    float* out = y + static_cast<std::size_t>(i) * ldy;
    if (cols == packed_weight::panel_width) {
      store8(out, acc[i][0]);
      store8(out + 8, acc[i][1]);
    } else {
      float tmp[16];
      store8(tmp, acc[i][0]);
      store8(tmp + 8, acc[i][1]);
      std::copy(tmp, tmp + cols, out);
    }
  }
}

}  // namespace

packed_weight::packed_weight(const float* w, int n, int k, const float* bias) : n_(n), k_(k) {
  panels_.assign(static_cast<std::size_t>(panels()) * k * panel_width, 0.0f);
  bias_.assign(static_cast<std::size_t>(panels()) * panel_width, 0.0f);
  for (int col = 0; col < n; ++col) {
    const int p = col / panel_width, c = col % panel_width;
    float* dst = &panels_[static_cast<std::size_t>(p) * k * panel_width + c];
    const float* src = w + static_cast<std::size_t>(col) * k;
    for (int kk = 0; kk < k; ++kk) dst[static_cast<std::size_t>(kk) * panel_width] = src[kk];
    if (bias != nullptr) bias_[static_cast<std::size_t>(p) * panel_width + c] = bias[col];
  }
}

void packed_weight::apply(const float* x, int m, float* y, int first, int last) const {
  for (int p = first; p < last; ++p) {
    const float* panel = &panels_[static_cast<std::size_t>(p) * k_ * panel_width];
    const float* b = &bias_[static_cast<std::size_t>(p) * panel_width];
    const int col0 = p * panel_width, cols = std::min(panel_width, n_ - col0);
    // Balanced row blocks (15 rows: 5+5+5, not 6+6+3): a block of 4 or
    // fewer rows has too few independent sums to hide the FMA latency.
    const int blocks = (m + 5) / 6;
    const float* next = p + 1 < last ? panel + static_cast<std::size_t>(k_) * panel_width : nullptr;
    for (int blk = 0, r = 0; blk < blocks; ++blk) {
      const float* ahead = blk == 0 ? next : nullptr;
      const int rows = (m - r + (blocks - blk) - 1) / (blocks - blk);
      const float* xr = x + static_cast<std::size_t>(r) * k_;
      float* yr = y + static_cast<std::size_t>(r) * n_ + col0;
      r += rows;
      switch (rows) {
        case 6: kernel<6>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        case 5: kernel<5>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        case 4: kernel<4>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        case 3: kernel<3>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        case 2: kernel<2>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        case 1: kernel<1>(xr, k_, panel, b, yr, n_, cols, ahead); break;
        default: break;
      }
    }
  }
}

}  // namespace vlcache
