#pragma once
/// \file
/// A rendered scene on disk, written and read back. Written: a real video's frames as background
/// (a seeded square window, scaled to the scene's size), the scene's shapes
/// drawn over them, one PNG per frame (lossless, so what the pipeline reads
/// is what the truth describes) and the truth as JSON lines.
///
/// OUT/frames/000000.png ...  (read back with the pattern OUT/frames/%06d.png)
/// OUT/truth.jsonl            one line per frame: index, objects, questions
/// OUT/scene.json             the scene's parameters and its background

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/scenes/scene.hpp"

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

/// A scene folder read back: where its frames are and what each frame answers.
struct scene_truth {
  std::string folder;
  std::string frames_pattern;                          ///< FOLDER/frames/%06d.png
  std::vector<std::vector<scene_question>> questions;  ///< per frame, from 0
};

/// True when `folder` holds a scene (a truth.jsonl beside a frames folder).
[[nodiscard]] bool is_scene_folder(const std::string& folder);

/// Errors name the file and line that is not a truth line.
[[nodiscard]] expected<scene_truth> read_scene(const std::string& folder);
/// Several scene folders; the first that cannot be read is the error.
[[nodiscard]] expected<std::vector<scene_truth>> read_scenes(const std::vector<std::string>& folders);

}  // namespace vlcache::connectors
