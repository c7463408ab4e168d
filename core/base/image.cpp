#include "core/base/image.hpp"

#include <string>

namespace vlcache {

status validate_frame(const image_view& f) {
  if (f.data == nullptr || f.width <= 0 || f.height <= 0)
    return error{errc::invalid_image, "empty frame: " + std::to_string(f.width) + "x" +
                                          std::to_string(f.height) +
                                          (f.data == nullptr ? " with no pixel data" : "")};
  if (f.channels != 3)
    return error{errc::invalid_image, "frame has " + std::to_string(f.channels) +
                                          " channels; 3 (RGB or BGR) are required"};
  if (f.bytes_per_channel != 1)
    return error{errc::invalid_image, "frame has " + std::to_string(8 * f.bytes_per_channel) +
                                          "-bit channels; 8-bit data is required"};
  if (f.stride() < static_cast<std::size_t>(f.width) * 3)
    return error{errc::invalid_image, "frame row stride " + std::to_string(f.stride()) +
                                          " is shorter than a row of " +
                                          std::to_string(f.width) + " pixels"};
  return {};
}

}  // namespace vlcache
