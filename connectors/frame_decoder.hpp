#pragma once
/// \file
/// Turns a wire frame into pixels: JPEG decoded with OpenCV, raw BGR copied;
/// a payload that does not decode to the announced size is an error.

#include "connectors/image_file.hpp"
#include "connectors/wire_format.hpp"

namespace vlcache::connectors {

[[nodiscard]] expected<owned_image> decode_frame(const wire_frame& f);
/// JPEG-encodes a BGR image (quality 1..100) for the wire.
[[nodiscard]] expected<std::vector<std::uint8_t>> encode_jpeg(const image_view& bgr, int quality);

}  // namespace vlcache::connectors
