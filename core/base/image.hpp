#pragma once
/// \file
/// A non-owning view of an interleaved camera frame, as it arrives from a
/// decoder. It carries its channel depth and order so that core/ can reject
/// what it cannot read instead of misreading it.

#include <cstddef>
#include <cstdint>

#include "core/base/error.hpp"

namespace vlcache {

enum class channel_order { rgb, bgr };

struct image_view {
  const std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  int bytes_per_channel = 1;  ///< 1 for 8-bit frames; anything else is refused
  std::size_t row_stride = 0; ///< bytes per row; 0 means tightly packed
  channel_order order = channel_order::rgb;

  [[nodiscard]] std::size_t stride() const noexcept {
    return row_stride != 0 ? row_stride
                           : static_cast<std::size_t>(width) * channels * bytes_per_channel;
  }
  [[nodiscard]] const std::uint8_t* row(int y) const noexcept { return data + stride() * y; }
};

/// Checks that a frame is a non-empty 8-bit, 3-channel image.
[[nodiscard]] status validate_frame(const image_view& frame);

}  // namespace vlcache
