#pragma once
/// \file
/// Per-patch signatures of a preprocessed frame, on the encoder's own grid:
/// three 64-bit perceptual hashes of the patch's luma and a copy of the raw
/// patch for the mean-absolute-difference gate.
///
/// - aHash: 8x8 area average, bit = cell > mean of the cells.
/// - dHash: 8 rows x 9 columns area average, bit = cell > its right neighbour.
/// - pHash: 8x8 lowest DCT-II coefficients of the patch, bit = coefficient >
///   mean of the 63 AC coefficients; the DC bit is always 0.
///
/// All three compare the patch with itself, so a uniform brightness shift
/// (without clipping) leaves them unchanged: only the MAD gate sees it.
/// The three hashes come out of one separable pass (rows, then columns) over
/// a luma plane, so a 336x336 frame costs a few hundred microseconds.

#include <cstdint>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/image.hpp"
#include "core/cache/patch_grid.hpp"

namespace vlcache {

struct frame_signatures {
  patch_grid grid;
  std::vector<std::uint64_t> ahash, dhash, phash;  ///< one per position, raster order
  std::vector<std::uint8_t> patches;  ///< patch-major raw RGB, patch_bytes() per position
  /// The frame's sensor noise (levels, per channel): the 25th percentile over
  /// its patches of patch_noise_sigma, so the flattest quarter of the view
  /// speaks, not its texture. -1 unless the engine estimates noise.
  float noise_sigma = -1.0f;

  [[nodiscard]] std::size_t patch_bytes() const noexcept {
    return static_cast<std::size_t>(grid.patch_size) * grid.patch_size * 3;
  }
  [[nodiscard]] const std::uint8_t* patch(int pos) const noexcept {
    return patches.data() + patch_bytes() * pos;
  }
};

[[nodiscard]] inline int hamming(std::uint64_t a, std::uint64_t b) noexcept {
  return __builtin_popcountll(a ^ b);
}

/// Mean absolute difference of two raw patches of `bytes` bytes, in 0..255.
[[nodiscard]] float mean_abs_diff(const std::uint8_t* a, const std::uint8_t* b,
                                  std::size_t bytes) noexcept;

/// Mean absolute difference of two raw RGB patches of side `patch` after
/// averaging each over cells of `cell` x `cell` pixels (the last row and
/// column of cells are smaller where `cell` does not divide `patch`), per
/// channel, in 0..255. Averaging n pixels divides independent pixel noise by
/// sqrt(n) while a change covering whole cells keeps its full size.
/// `cell` 1 is mean_abs_diff.
[[nodiscard]] float cell_mean_abs_diff(const std::uint8_t* a, const std::uint8_t* b, int patch,
                                       int cell) noexcept;

/// Standard deviation of the sensor noise in a raw RGB patch of side `patch`
/// (levels, per channel), by Immerkaer's estimator: the mean absolute
/// response of a 3x3 mask that cancels constant, linear and quadratic
/// content. Texture and edges bias it upwards, so take a low quantile over
/// patches. One frame suffices: motion cannot raise it.
[[nodiscard]] float patch_noise_sigma(const std::uint8_t* rgb, int patch) noexcept;

/// Computes signatures for one grid; holds the precomputed resampling and
/// DCT matrices, so build it once and reuse it for every frame.
class signature_engine {
 public:
  /// `estimate_noise`: also fill frame_signatures::noise_sigma (about
  /// 0.15 ms a 224 px frame; only a gate with noise_factor reads it).
  [[nodiscard]] static expected<signature_engine> make(const patch_grid& grid, bool estimate_noise = false);

  /// `image` must be an 8-bit, 3-channel image of exactly grid.image_size
  /// square (the preprocessed crop). `out` is overwritten; its buffers are
  /// reused between calls. On error `out` is untouched.
  [[nodiscard]] status compute(const image_view& image, frame_signatures& out) const;
  [[nodiscard]] expected<frame_signatures> compute(const image_view& image) const;

  [[nodiscard]] const patch_grid& grid() const noexcept { return grid_; }

 private:
  static constexpr int width = 32;  // row-pass columns: 8 aHash, 9 dHash, pad, 8 DCT
  signature_engine(const patch_grid& grid, bool estimate_noise);

  patch_grid grid_;
  bool estimate_noise_ = false;
  std::vector<float> row_basis_;  // P x width: [area8^T | area9^T | 0 | dct8^T]
  std::vector<float> area8_;      // 8 x P
  std::vector<float> dct8_;       // 8 x P
};

}  // namespace vlcache
