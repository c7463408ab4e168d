#include "connectors/jpeg_size.hpp"

namespace vlcache::connectors {

std::optional<jpeg_size> read_jpeg_size(const std::uint8_t* d, std::size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return std::nullopt;  // SOI
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return std::nullopt;
    const std::uint8_t marker = d[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {  // no length
      i += 2;
      continue;
    }
    const std::size_t length = (static_cast<std::size_t>(d[i + 2]) << 8) | d[i + 3];
    if (length < 2) return std::nullopt;
    // SOF0..SOF15 but DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      if (i + 9 > n || length < 7) return std::nullopt;
      return jpeg_size{(d[i + 7] << 8) | d[i + 8], (d[i + 5] << 8) | d[i + 6]};
    }
    if (marker == 0xDA || marker == 0xD9) return std::nullopt;  // scan data or end before any frame header
    i += 2 + length;
  }
  return std::nullopt;
}

}  // namespace vlcache::connectors
