#include "core/base/stream_name.hpp"

#include <cstdint>
#include <cstdio>

namespace vlcache {

namespace {

/// Length of the valid UTF-8 sequence at `s[i]`, or 0 (overlong forms,
/// surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool is_control(const std::string& s, std::size_t i, std::size_t n) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (n == 1) return c < 0x20 || c == 0x7F;
  return n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;  // C1 controls U+0080..U+009F
}

}  // namespace

status check_stream_name(const std::string& name) {
  auto bad = [&](const std::string& what) {
    return error{errc::invalid_argument, "stream name '" + printable(name) + "' " + what};
  };
  if (name.empty()) return error{errc::invalid_argument, "stream name is empty"};
  if (name.size() > max_stream_name_bytes)
    return bad("is " + std::to_string(name.size()) + " bytes (at most " + std::to_string(max_stream_name_bytes) + ")");
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t n = utf8_length(name, i);
    if (n == 0) return bad("is not valid UTF-8");
    if (is_control(name, i, n)) return bad("holds a control character");
    i += n;
  }
  return {};
}

std::string printable(const std::string& text, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && out.size() < max_bytes;) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0 || is_control(text, i, n)) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += b;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  if (out.size() >= max_bytes) out += "...";
  return out;
}

}  // namespace vlcache
