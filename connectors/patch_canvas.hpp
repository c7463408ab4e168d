#pragma once
/// \file
/// The receiving end of patch shipping: per stream, the frame as the camera
/// last sent it, updated by each patches message. A stream's first message
/// must be a keyframe; after a lost message (a gap in the patch message
/// numbers) the canvas is stale and its messages are refused until the next
/// keyframe, so a stream never shows patches pasted onto the wrong frame.

#include <cstdint>
#include <map>
#include <string>

#include "connectors/image_file.hpp"
#include "connectors/wire_format.hpp"

namespace vlcache::connectors {

class patch_canvas_set {
 public:
  /// The whole frame after applying `f` (a patches message); errors name
  /// why the message cannot be applied (no keyframe yet, after a gap, a size change).
  [[nodiscard]] expected<owned_image> apply(const wire_frame& f);
  void forget(const std::string& stream) { canvases_.erase(stream); }

 private:
  struct canvas {
    owned_image image;
    std::uint32_t last_number = 0;
    bool valid = false;
  };
  std::map<std::string, canvas> canvases_;
};

}  // namespace vlcache::connectors
