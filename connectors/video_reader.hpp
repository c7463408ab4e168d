#pragma once
/// \file
/// Reads frames from a video file, an image sequence pattern (img_%04d.png),
/// a folder of images (sorted by name) or a stream URL (RTSP, HTTP, V4L2
/// device) with OpenCV, sampled at a target rate, and hands them to core/ as
/// image views.

#include <cstdint>
#include <memory>
#include <string>

#include "core/base/error.hpp"
#include "core/base/image.hpp"

namespace vlcache::connectors {

struct video_reader_config {
  std::string source;       ///< file path, image sequence pattern, or URL
  double sample_fps = 0.0;  ///< 0: every decoded frame
  std::uint64_t start_frame = 0;  ///< frames of the source skipped before sampling
  std::uint64_t max_frames = 0;   ///< 0: until the source ends
  /// Network sources: longest wait to connect and for each frame (0: the
  /// backend's own, 30 s for FFmpeg), so a dead camera cannot hang a reader.
  double timeout_s = 0.0;
};

/// A camera on the network (rtsp://, http://, udp://, ...) rather than a file:
/// it can drop and come back, and its reads block on the network.
[[nodiscard]] bool is_network_source(const std::string& source);

struct video_frame {
  std::uint64_t seq = 0;         ///< index among the frames this reader returned
  std::uint64_t source_index = 0;  ///< index among the decoded frames of the source
  double capture_ms = 0.0;       ///< position in the source, milliseconds
  image_view view;               ///< BGR, valid until the next read()
};

class video_reader {
 public:
  /// Opens the source; an error names the source when OpenCV cannot open it.
  [[nodiscard]] static expected<std::unique_ptr<video_reader>> open(const video_reader_config& c);
  ~video_reader();
  video_reader(const video_reader&) = delete;
  video_reader& operator=(const video_reader&) = delete;

  /// The next sampled frame; not_found at the end of the source.
  [[nodiscard]] expected<video_frame> read();
  [[nodiscard]] double source_fps() const noexcept;
  [[nodiscard]] int width() const noexcept;
  [[nodiscard]] int height() const noexcept;

 private:
  struct impl;
  explicit video_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace vlcache::connectors
