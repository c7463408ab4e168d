#include "core/kernels/small_gemm.hpp"

#include "core/base/simd.hpp"

#include <algorithm>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace vlcache {
namespace {

// One vector register of floats: 16 with AVX-512 (32 zmm registers: a
// 12 x 32 tile, 24 sums), 8 with AVX2 (16 ymm: the classic 6 x 16 tile).
#if defined(__AVX512F__)
using vec = simd::v16f;
constexpr int max_rows = 12;
#else
using vec = simd::v8f;
constexpr int max_rows = 6;
#endif
constexpr int lanes = simd::lanes<vec>;
static_assert(2 * lanes == packed_weight::panel_width, "a panel is two vector registers wide");

inline vec load(const float* p) { return simd::load<vec>(p); }
inline void store(float* p, vec v) { simd::store(p, v); }

#if defined(__F16C__)
// GCC 12's _mm512_cvtph_ps passes an undefined vector as its unused mask
// source and then warns about it (-Wmaybe-uninitialized): not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// `lanes` half-precision weights widened to f32.
inline vec load(const std::uint16_t* p) {
#if defined(__AVX512F__)
  const __m512 w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#else
  const __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#endif
  vec v;
  std::memcpy(&v, &w, sizeof v);
  return v;
}
#pragma GCC diagnostic pop
#else
inline vec load(const std::uint16_t*) { return vec{}; }  // never called: half_supported() is false
#endif

/// ROWS (<= max_rows) rows of x against one panel: 2 x ROWS sums, 2 weight
/// vectors, 1 broadcast per step. `next`, when set, is the panel that
/// follows: one step's worth of it is prefetched per step, so its weights
/// stream in while this one computes (with few rows the product is
/// otherwise bound by the wait for weights).
template <int ROWS, class W>
void kernel(const float* x, int k, const W* panel, const float* bias, float* y, int ldy, int cols, const W* next) {
  constexpr int pw = packed_weight::panel_width;
  vec acc[ROWS][2];
  const vec b0 = load(bias), b1 = load(bias + lanes);
  for (int i = 0; i < ROWS; ++i) {
    acc[i][0] = b0;
    acc[i][1] = b1;
  }
  for (int kk = 0; kk < k; ++kk) {
    const W* w = panel + static_cast<std::size_t>(kk) * pw;
    if (next != nullptr)
      for (int line = 0; line < pw; line += 64 / static_cast<int>(sizeof(W)))
        __builtin_prefetch(next + static_cast<std::size_t>(kk) * pw + line);
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

template <int ROWS, class W>
void run_rows(int rows, const float* x, int k, const W* panel, const float* bias, float* y, int ldy, int cols,
              const W* next) {
  if constexpr (ROWS > 0) {
    if (rows == ROWS) return kernel<ROWS>(x, k, panel, bias, y, ldy, cols, next);
    run_rows<ROWS - 1>(rows, x, k, panel, bias, y, ldy, cols, next);
  }
}

/// y = x W^T + b for panels [first, last) of `panels` (f32 or half).
template <class W>
void apply_panels(const W* panels, const float* bias, int n, int k, const float* x, int m, float* y, int first,
                  int last) {
  constexpr int pw = packed_weight::panel_width;
  for (int p = first; p < last; ++p) {
    const W* panel = panels + static_cast<std::size_t>(p) * k * pw;
    const float* b = bias + static_cast<std::size_t>(p) * pw;
    const int col0 = p * pw, cols = std::min(pw, n - col0);
    // Balanced row blocks (15 rows of AVX2: 5+5+5, not 6+6+3): a block of 4
    // or fewer rows has too few independent sums to hide the FMA latency.
    const int blocks = (m + max_rows - 1) / max_rows;
    const W* next = p + 1 < last ? panel + static_cast<std::size_t>(k) * pw : nullptr;
    for (int blk = 0, r = 0; blk < blocks; ++blk) {
      const W* ahead = blk == 0 ? next : nullptr;
      const int rows = (m - r + (blocks - blk) - 1) / (blocks - blk);
      run_rows<max_rows>(rows, x + static_cast<std::size_t>(r) * k, k, panel, b,
                         y + static_cast<std::size_t>(r) * n + col0, n, cols, ahead);
      r += rows;
    }
  }
}

std::uint16_t to_half(float v) {
#if defined(__F16C__)
  return static_cast<std::uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
#else
  (void)v;
  return 0;  // never called: half_supported() is false
#endif
}

}  // namespace

bool packed_weight::half_supported() noexcept {
#if defined(__F16C__)
  return true;
#else
  return false;
#endif
}

packed_weight::packed_weight(const float* w, int n, int k, const float* bias, bool half) : n_(n), k_(k) {
  const std::size_t size = static_cast<std::size_t>(panels()) * k * panel_width;
  if (half) half_panels_.assign(size, 0);
  else panels_.assign(size, 0.0f);
  bias_.assign(static_cast<std::size_t>(panels()) * panel_width, 0.0f);
  for (int col = 0; col < n; ++col) {
    const int p = col / panel_width, c = col % panel_width;
    const std::size_t at = static_cast<std::size_t>(p) * k * panel_width + c;
    const float* src = w + static_cast<std::size_t>(col) * k;
    for (int kk = 0; kk < k; ++kk) {
      const std::size_t i = at + static_cast<std::size_t>(kk) * panel_width;
      if (half) half_panels_[i] = to_half(src[kk]);
      else panels_[i] = src[kk];
    }
    if (bias != nullptr) bias_[static_cast<std::size_t>(p) * panel_width + c] = bias[col];
  }
}

void packed_weight::apply(const float* x, int m, float* y, int first, int last) const {
  if (half()) apply_panels(half_panels_.data(), bias_.data(), n_, k_, x, m, y, first, last);
  else apply_panels(panels_.data(), bias_.data(), n_, k_, x, m, y, first, last);
}

}  // namespace vlcache
