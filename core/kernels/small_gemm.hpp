#pragma once
/// \file
/// y = x W^T + b for few rows of x (the miss tokens of a frame) against a
/// large weight W, with W packed once at load time.
///
/// Why not BLAS: OpenBLAS packs the weight on every call, and with ~10-60
/// rows that copy costs as much as the arithmetic (a 10-row product runs at
/// 15-19 GFLOP/s against 64-104 at 197 rows). Packing W once into column
/// panels that stay in L2 while every row block passes over them keeps the
/// FMA units busy at small row counts. Large row counts go to BLAS.

#include <cstdint>
#include <vector>

namespace vlcache {

class packed_weight {
 public:
  /// Output columns per panel: two vector registers (2 x 16 floats with
  /// AVX-512, 2 x 8 with AVX2; the build targets its machine's CPU).
#if defined(__AVX512F__)
  static constexpr int panel_width = 32;
#else
  static constexpr int panel_width = 16;
#endif

  packed_weight() = default;
  /// `w` is [n, k] row-major (a torch Linear weight), `bias` [n] or null.
  /// With `half`, the panels hold IEEE half-precision weights (rounded to
  /// nearest), widened to f32 in registers: half the bytes to stream, which
  /// is what few rows wait for; the arithmetic and the bias stay f32.
  packed_weight(const float* w, int n, int k, const float* bias, bool half = false);

  /// Whether half-precision panels can run here (F16C).
  [[nodiscard]] static bool half_supported() noexcept;

  /// y[m, n] (row stride n) = x[m, k] W^T + b for panels [first, last).
  void apply(const float* x, int m, float* y, int first_panel, int last_panel) const;

  [[nodiscard]] int n() const noexcept { return n_; }
  [[nodiscard]] int k() const noexcept { return k_; }
  [[nodiscard]] int panels() const noexcept { return (n_ + panel_width - 1) / panel_width; }
  [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
  [[nodiscard]] bool half() const noexcept { return !half_panels_.empty(); }

 private:
  int n_ = 0, k_ = 0;
  std::vector<float> panels_;  // panels() x k x panel_width, zero-padded (f32)
  std::vector<std::uint16_t> half_panels_;  // the same in half precision (instead)
  std::vector<float> bias_;    // panels() x panel_width, zero-padded
};

}  // namespace vlcache
