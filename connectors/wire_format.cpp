#include "connectors/wire_format.hpp"

#include "core/base/stream_name.hpp"

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
  if (encoding > 2) return bad("encoding " + std::to_string(encoding) + " (0 = raw, 1 = JPEG, 2 = patches)");
  if (name_len == 0 || name_len > 256) return bad("stream name length " + std::to_string(name_len));
  if (r.left < name_len) return bad("truncated in the stream name");
  wire_frame f;
  f.stream.assign(reinterpret_cast<const char*>(r.p), name_len);
  r.p += name_len;
  r.left -= name_len;
  // Names reach logs, JSON and the page: checked here, at the edge.
  if (auto st = check_stream_name(f.stream); !st) return bad(st.err().message);
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
  if (f.encoding == frame_encoding::patches)
    if (auto h = parse_patches(f); !h) return h.err();
  return f;
}

std::vector<std::uint8_t> encode_patches(const std::uint8_t* bgr, int size, int patch_size,
                                         const std::vector<int>& positions, bool keyframe, std::uint32_t number) {
  std::vector<std::uint8_t> out;
  const int side = size / patch_size;
  out.reserve(patch_header::bytes + positions.size() * (4 + static_cast<std::size_t>(patch_size) * patch_size * 3));
  put<std::uint16_t>(out, static_cast<std::uint16_t>(patch_size));
  put<std::uint8_t>(out, keyframe ? 1 : 0);
  put<std::uint8_t>(out, 0);
  put<std::uint32_t>(out, number);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(positions.size()));
  for (int p : positions) {
    put<std::uint32_t>(out, static_cast<std::uint32_t>(p));
    const int y0 = (p / side) * patch_size, x0 = (p % side) * patch_size;
    for (int y = 0; y < patch_size; ++y) {
      const std::uint8_t* row = bgr + (static_cast<std::size_t>(y0 + y) * size + x0) * 3;
      out.insert(out.end(), row, row + patch_size * 3);
    }
  }
  return out;
}

expected<patch_header> parse_patches(const wire_frame& f) {
  const std::string where = " (stream '" + f.stream + "')";
  reader r{f.payload.data(), f.payload.size()};
  std::uint16_t p = 0;
  std::uint8_t flags = 0, zero = 0;
  patch_header h;
  if (!r.get(p) || !r.get(flags) || !r.get(zero) || !r.get(h.number) || !r.get(h.count))
    return bad("patches payload shorter than its header" + where);
  h.patch_size = p;
  h.keyframe = (flags & 1) != 0;
  if (f.width != f.height) return bad("patches need a square frame, not " + std::to_string(f.width) + "x" +
                                      std::to_string(f.height) + where);
  if (p == 0 || f.width % p != 0)
    return bad("patch size " + std::to_string(p) + " does not divide the frame side " + std::to_string(f.width) + where);
  const std::uint64_t side = f.width / p, per = 4 + static_cast<std::uint64_t>(p) * p * 3;
  if (h.count > side * side) return bad(std::to_string(h.count) + " patches for a grid of " + std::to_string(side * side) + where);
  if (r.left != h.count * per)
    return bad("patches payload of " + std::to_string(r.left) + " bytes for " + std::to_string(h.count) + " patches of " +
               std::to_string(p) + "x" + std::to_string(p) + where);
  if (h.keyframe && h.count != side * side) return bad("a keyframe with " + std::to_string(h.count) + " of " +
                                                       std::to_string(side * side) + " patches" + where);
  for (std::uint32_t i = 0; i < h.count; ++i) {
    std::uint32_t pos = 0;
    std::memcpy(&pos, r.p + i * per, 4);
    if (pos >= side * side) return bad("patch position " + std::to_string(pos) + " outside the grid" + where);
  }
  return h;
}

}  // namespace vlcache::connectors
