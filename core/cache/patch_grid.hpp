#pragma once
/// \file
/// The vision encoder's patch grid on its square input: one patch is one
/// visual token, numbered in raster order.

#include "core/base/error.hpp"

namespace vlcache {

struct patch_grid {
  int image_size = 224;  ///< side of the square encoder input, pixels
  int patch_size = 16;   ///< side of one patch, pixels

  [[nodiscard]] int side() const noexcept { return image_size / patch_size; }
  [[nodiscard]] int count() const noexcept { return side() * side(); }
  [[nodiscard]] int row_of(int pos) const noexcept { return pos / side(); }
  [[nodiscard]] int col_of(int pos) const noexcept { return pos % side(); }

  /// Sizes must be positive and the image an exact multiple of the patch.
  [[nodiscard]] static expected<patch_grid> make(int image_size, int patch_size);
};

}  // namespace vlcache
