#include "core/small_gemm.hpp"

#include <algorithm>
#include <cstring>

namespace vlcache {
namespace {

// One vector register of floats: 16 with AVX-512 (32 zmm registers: a
// 12 x 32 tile, 24 sums), 8 with AVX2 (16 ymm: the classic 6 x 16 tile).
constexpr int lanes = packed_weight::panel_width / 2;
using vec = float __attribute__((vector_size(lanes * sizeof(float))));
#if defined(__AVX512F__)
constexpr int max_rows = 12;
#else
constexpr int max_rows = 6;
#endif

inline vec load(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vec v) { std::memcpy(p, &v, sizeof v); }

/// ROWS (<= max_rows) rows of x against one panel: 2 x ROWS sums, 2 weight
/// vectors, 1 broadcast per step. `next`, when set, is the panel that
/// follows: one step's worth of it is prefetched per step, so its weights
/// stream in while this one computes (with few rows the product is
/// otherwise bound by the wait for weights).
template <int ROWS>
void kernel(const float* x, int k, const float* panel, const float* bias, float* y, int ldy, int cols,
            const float* next) {
  constexpr int pw = packed_weight::panel_width;
  vec acc[ROWS][2];
  const vec b0 = load(bias), b1 = load(bias + lanes);
  for (int i = 0; i < ROWS; ++i) {
    acc[i][0] = b0;
    acc[i][1] = b1;
  }
  for (int kk = 0; kk < k; ++kk) {
    const float* w = panel + static_cast<std::size_t>(kk) * pw;
    if (next != nullptr)
      for (int line = 0; line < pw; line += 16) __builtin_prefetch(next + static_cast<std::size_t>(kk) * pw + line);
    const vec w0 = load(w), w1 = load(w + lanes);
#pragma GCC unroll 12
    for (int i = 0; i < ROWS; ++i) {
      const float xi = x[static_cast<std::size_t>(i) * k + kk];
      acc[i][0] += xi * w0;
      acc[i][1] += xi * w1;
    }
  }
  for (int i = 0; i < ROWS; ++i) {
    float* out = y + static_cast<std::size_t>(i) * ldy;
    if (cols == pw) {
      store(out, acc[i][0]);
      store(out + lanes, acc[i][1]);
    } else {
      float tmp[pw];
      store(tmp, acc[i][0]);
      store(tmp + lanes, acc[i][1]);
      std::copy(tmp, tmp + cols, out);
    }
  }
}

template <int ROWS>
void run_rows(int rows, const float* x, int k, const float* panel, const float* bias, float* y, int ldy, int cols,
              const float* next) {
  if constexpr (ROWS > 0) {
    if (rows == ROWS) return kernel<ROWS>(x, k, panel, bias, y, ldy, cols, next);
    run_rows<ROWS - 1>(rows, x, k, panel, bias, y, ldy, cols, next);
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
    // Balanced row blocks (15 rows of AVX2: 5+5+5, not 6+6+3): a block of 4
    // or fewer rows has too few independent sums to hide the FMA latency.
    const int blocks = (m + max_rows - 1) / max_rows;
    const float* next = p + 1 < last ? panel + static_cast<std::size_t>(k_) * panel_width : nullptr;
    for (int blk = 0, r = 0; blk < blocks; ++blk) {
      const float* ahead = blk == 0 ? next : nullptr;
      const int rows = (m - r + (blocks - blk) - 1) / (blocks - blk);
      const float* xr = x + static_cast<std::size_t>(r) * k_;
      float* yr = y + static_cast<std::size_t>(r) * n_ + col0;
      r += rows;
      run_rows<max_rows>(rows, xr, k_, panel, b, yr, n_, cols, ahead);
    }
  }
}

}  // namespace vlcache
