#pragma once
/// \file
/// A JPEG's width and height read from its frame header (SOFn), without
/// decoding: what a message claims is checked before any pixel is allocated.

#include <cstddef>
#include <cstdint>
#include <optional>

namespace vlcache::connectors {

struct jpeg_size {
  int width = 0, height = 0;
};

/// Null when the bytes hold no JPEG frame header before their end.
[[nodiscard]] std::optional<jpeg_size> read_jpeg_size(const std::uint8_t* data, std::size_t size);

}  // namespace vlcache::connectors
