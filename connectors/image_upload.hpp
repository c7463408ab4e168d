#pragma once
/// \file
/// An image sent inside a request as a data URL (`data:image/jpeg;base64,...`
/// or `data:image/png;base64,...`, as OpenAI's image_url parts carry them).
/// Its size in bytes and its width and height (read from the JPEG or PNG
/// header) are checked against the limits before any pixel is decoded.

#include <cstdint>
#include <string>
#include <string_view>

#include "connectors/image_file.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

struct image_limits {
  std::size_t max_bytes = std::size_t{8} << 20;  ///< the encoded image, after base64
  std::int64_t max_pixels = 4096LL * 4096;       ///< width x height from its header
};

/// Strict base64 (RFC 4648, padding optional); null on a byte outside the alphabet.
[[nodiscard]] std::optional<std::string> decode_base64(std::string_view text);

/// The decoded image (BGR). Errors: invalid_image for a URL that is not a
/// base64 JPEG or PNG data URL, or bytes that do not decode; capacity for an
/// image over the limits (its bytes, or its pixels as its header states).
[[nodiscard]] expected<owned_image> decode_data_url(std::string_view url, const image_limits& limits);

}  // namespace vlcache::connectors
