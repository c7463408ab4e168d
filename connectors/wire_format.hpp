#pragma once
/// \file
/// The versioned binary message that carries one camera frame between
/// processes (ZeroMQ). All integers little-endian:
///
///   offset size  field
///   0      4     magic "VLCF"
///   4      2     version (1)
///   6      1     kind (1 = frame)
///   7      1     encoding (0 = raw BGR8, 1 = JPEG, 2 = changed patches)
///   8      2     stream name length N (1..256)
///   10     N     stream name (UTF-8)
///   10+N   8     seq
///   18+N   8     capture time, milliseconds (IEEE double)
///   26+N   4     width   (1..8192)
///   30+N   4     height  (1..8192)
///   34+N   1     channels (3)
///   35+N   4     payload length L
///   39+N   L     payload: width*height*3 bytes (raw), a JPEG file, or patches
///
/// Patches (encoding 2): the camera preprocessed the frame to the encoder's
/// square input (width = height) and ships only the patches its own gate
/// found changed, as raw BGR8; the receiver pastes them onto the stream's
/// canvas. Payload:
///
///   0      2     patch size P (width must be a multiple)
///   2      1     flags (bit 0: keyframe, every patch follows)
///   3      1     0
///   4      4     patch message number (consecutive per stream: a gap means
///                a lost message, and the canvas waits for the next keyframe)
///   8      4     patch count K
///   12     K x (4 + P*P*3)   position (raster order in the patch grid), pixels
///
/// decode() accepts nothing else: a truncated, oversized, wrong-magic,
/// wrong-version or inconsistent message is an error naming the field.

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache::connectors {

enum class frame_encoding : std::uint8_t { raw_bgr = 0, jpeg = 1, patches = 2 };



struct wire_frame {
  std::string stream;
  std::uint64_t seq = 0;
  double capture_ms = 0.0;
  frame_encoding encoding = frame_encoding::jpeg;
  std::uint32_t width = 0, height = 0;
  std::uint8_t channels = 3;
  std::vector<std::uint8_t> payload;
};

inline constexpr std::uint16_t wire_version = 1;
inline constexpr std::size_t max_wire_bytes = 64u << 20;

[[nodiscard]] std::vector<std::uint8_t> encode_wire(const wire_frame& f);
[[nodiscard]] expected<wire_frame> decode_wire(const std::uint8_t* data, std::size_t size);

/// The parsed header of a patches payload (the pixels stay in the payload).
struct patch_header {
  int patch_size = 0;
  bool keyframe = false;
  std::uint32_t number = 0;
  std::uint32_t count = 0;
  static constexpr std::size_t bytes = 12;
};

/// Builds a patches payload from a BGR8 image of side `size`.
[[nodiscard]] std::vector<std::uint8_t> encode_patches(const std::uint8_t* bgr, int size, int patch_size,
                                                       const std::vector<int>& positions, bool keyframe,
                                                       std::uint32_t number);
/// Checks a patches payload against the frame's size; the error names the problem.
[[nodiscard]] expected<patch_header> parse_patches(const wire_frame& f);

}  // namespace vlcache::connectors
