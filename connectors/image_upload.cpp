#include "connectors/image_upload.hpp"

#include <array>
#include <optional>

#include "connectors/jpeg_size.hpp"

namespace vlcache::connectors {
namespace {

struct header_size {
  std::int64_t width = 0, height = 0;
};

std::optional<header_size> png_size(const std::string& b) {
  static const char signature[] = "\x89PNG\r\n\x1a\n";
  if (b.size() < 24 || b.compare(0, 8, signature, 8) != 0 || b.compare(12, 4, "IHDR") != 0) return std::nullopt;
  auto be32 = [&](std::size_t at) {
    return (std::int64_t{static_cast<unsigned char>(b[at])} << 24) | (static_cast<unsigned char>(b[at + 1]) << 16) |
           (static_cast<unsigned char>(b[at + 2]) << 8) | static_cast<unsigned char>(b[at + 3]);
  };
  return header_size{be32(16), be32(20)};
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  static const std::array<signed char, 256> value = [] {
    std::array<signed char, 256> v{};
    v.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(alphabet[i])] = static_cast<signed char>(i);
    return v;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int held = 0;
  for (char c : text) {
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xFF));
    }
  }
  return out;
}

expected<owned_image> decode_data_url(std::string_view url, const image_limits& limits) {
  const bool jpeg = url.rfind("data:image/jpeg;base64,", 0) == 0 || url.rfind("data:image/jpg;base64,", 0) == 0;
  const bool png = url.rfind("data:image/png;base64,", 0) == 0;
  if (!jpeg && !png)
    return error{errc::invalid_image, "the image URL is neither camera://NAME nor a base64 data URL of a JPEG or PNG "
                                      "(data:image/jpeg;base64,... or data:image/png;base64,...)"};
  const std::string_view payload = url.substr(url.find(',') + 1);
  // Checked on the encoded length first: nothing is decoded past the limit.
  if (payload.size() / 4 * 3 > limits.max_bytes)
    return error{errc::capacity, "the image has about " + std::to_string(payload.size() / 4 * 3) +
                                     " bytes; at most " + std::to_string(limits.max_bytes) + " are taken"};
  auto bytes = decode_base64(payload);
  if (!bytes) return error{errc::invalid_image, "the image's data URL is not valid base64"};
  std::optional<header_size> size;
  if (png) {
    size = png_size(*bytes);
  } else if (auto j = read_jpeg_size(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size())) {
    size = header_size{j->width, j->height};
  }
  if (!size || size->width <= 0 || size->height <= 0)
    return error{errc::invalid_image, std::string("the image's bytes are not a ") + (png ? "PNG" : "JPEG") +
                                          " (no valid header)"};
  if (size->width * size->height > limits.max_pixels)
    return error{errc::capacity, "the image is " + std::to_string(size->width) + "x" + std::to_string(size->height) +
                                     " pixels; at most " + std::to_string(limits.max_pixels) + " are taken"};
  auto image = decode_image(*bytes);
  if (!image || image->width != size->width || image->height != size->height)
    return error{errc::invalid_image, std::string("the image's bytes do not decode as a ") + (png ? "PNG" : "JPEG")};
  return std::move(*image);
}

}  // namespace vlcache::connectors
