#pragma once
/// \file
/// Writes a rendered scene to disk: a real video's frames as background
/// (a seeded square window, scaled to the scene's size), the scene's shapes
/// drawn over them, one PNG per frame (lossless, so what the pipeline reads
/// is what the truth describes) and the truth as JSON lines.
///
/// OUT/frames/000000.png ...  (read back with the pattern OUT/frames/%06d.png)
/// OUT/truth.jsonl            one line per frame: index, objects, questions
/// OUT/scene.json             the scene's parameters and its background

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/scene.hpp"

namespace vlcache::connectors {

struct scene_background {
  std::string video;            ///< any source OpenCV reads
  std::uint64_t start_frame = 0;  ///< first frame of the segment used
};

struct scene_written {
  int frames = 0;
  int questions = 0;
  std::string frames_pattern;  ///< OUT/frames/%06d.png
};

/// The background segment must hold the scene's frames; errors name the
/// video or file that failed.
[[nodiscard]] expected<scene_written> write_scene(const scene& sc, const scene_background& background,
                                                 const std::string& out_dir);

}  // namespace vlcache::connectors
