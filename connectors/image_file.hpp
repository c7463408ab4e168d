#pragma once
/// \file
/// Reads one image file (any format OpenCV decodes) into an owned BGR buffer.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/image.hpp"

namespace vlcache::connectors {

struct owned_image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> bgr;  ///< packed, 3 channels, 8-bit

  [[nodiscard]] image_view view() const noexcept {
    return image_view{bgr.data(), width, height, 3, 1, 0, channel_order::bgr};
  }
};

/// Encoded image bytes (any format OpenCV decodes), decoded; null when they do not decode.
[[nodiscard]] std::optional<owned_image> decode_image(const std::string& bytes);

/// Errors name the file: missing, unreadable, or not decodable as an image.
[[nodiscard]] expected<owned_image> read_image(const std::string& path);

}  // namespace vlcache::connectors
