#include "connectors/wire_format.hpp"

#include <cstring>

namespace vlcache::connectors {
namespace {

constexpr char magic[4] = {'V', 'L', 'C', 'F'};
constexpr std::uint8_t kind_frame = 1;

template <class T>
void put(std::vector<std::uint8_t>& out, T v) {
  std::uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the machines we target are little-endian
  out.insert(out.end(), b, b + sizeof(T));
}

struct reader {
  const std::uint8_t* p;
  std::size_t left;
  template <class T>
  bool get(T& v) {
    if (left < sizeof(T)) return false;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    left -= sizeof(T);
    return true;
  }
};

error bad(const std::string& what) { return error{errc::invalid_argument, "frame message: " + what}; }

}  // namespace

std::vector<std::uint8_t> encode_wire(const wire_frame& f) {
  std::vector<std::uint8_t> out;
  out.reserve(64 + f.stream.size() + f.payload.size());
  for (char c : magic) out.push_back(static_cast<std::uint8_t>(c));
  put<std::uint16_t>(out, wire_version);
  put<std::uint8_t>(out, kind_frame);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(f.encoding));
  put<std::uint16_t>(out, static_cast<std::uint16_t>(f.stream.size()));
  out.insert(out.end(), f.stream.begin(), f.stream.end());
  put<std::uint64_t>(out, f.seq);
  put<double>(out, f.capture_ms);
  put<std::uint32_t>(out, f.width);
  put<std::uint32_t>(out, f.height);
  put<std::uint8_t>(out, f.channels);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(f.payload.size()));
  out.insert(out.end(), f.payload.begin(), f.payload.end());
  return out;
}

expected<wire_frame> decode_wire(const std::uint8_t* data, std::size_t size) {
  if (size > max_wire_bytes)
    return bad("oversized: " + std::to_string(size) + " bytes (limit " + std::to_string(max_wire_bytes) + ")");
  if (size < 10) return bad("truncated: " + std::to_string(size) + " bytes, no header");
  if (std::memcmp(data, magic, 4) != 0) return bad("wrong magic (not a vlcache frame)");
  reader r{data + 4, size - 4};
  std::uint16_t version = 0, name_len = 0;
  std::uint8_t kind = 0, encoding = 0;
  (void)r.get(version);
  (void)r.get(kind);
  (void)r.get(encoding);
  (void)r.get(name_len);
  if (version != wire_version)
    return bad("version " + std::to_string(version) + " (this build reads " + std::to_string(wire_version) + ")");
  if (kind != kind_frame) return bad("kind " + std::to_string(kind) + " (1 = frame)");
  if (encoding > 1) return bad("encoding " + std::to_string(encoding) + " (0 = raw, 1 = JPEG)");
  if (name_len == 0 || name_len > 256) return bad("stream name length " + std::to_string(name_len));
  if (r.left < name_len) return bad("truncated in the stream name");
  wire_frame f;
  f.stream.assign(reinterpret_cast<const char*>(r.p), name_len);
  r.p += name_len;
  r.left -= name_len;
  std::uint32_t payload_len = 0;
  if (!r.get(f.seq) || !r.get(f.capture_ms) || !r.get(f.width) || !r.get(f.height) || !r.get(f.channels) ||
      !r.get(payload_len))
    return bad("truncated in the header of stream '" + f.stream + "'");
  f.encoding = static_cast<frame_encoding>(encoding);
  if (f.width == 0 || f.height == 0 || f.width > 8192 || f.height > 8192)
    return bad("size " + std::to_string(f.width) + "x" + std::to_string(f.height) + " of stream '" + f.stream + "'");
  if (f.channels != 3) return bad(std::to_string(f.channels) + " channels in stream '" + f.stream + "' (3 needed)");
  if (payload_len != r.left)
    return bad("payload length " + std::to_string(payload_len) + " but " + std::to_string(r.left) +
               " bytes follow (stream '" + f.stream + "')");
  if (f.encoding == frame_encoding::raw_bgr &&
      static_cast<std::uint64_t>(f.width) * f.height * 3 != payload_len)
    return bad("raw payload of " + std::to_string(payload_len) + " bytes for " + std::to_string(f.width) + "x" +
               std::to_string(f.height) + "x3 (stream '" + f.stream + "')");
  f.payload.assign(r.p, r.p + payload_len);
  return f;
}

}  // namespace vlcache::connectors
