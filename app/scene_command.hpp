#pragma once
/// \file
/// `vlcache scene`: renders a scene with known answers (core/scenes/scene) over a
/// segment of a real video and writes its frames and truth (connectors/scene_video).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/scenes/scene.hpp"

namespace vlcache::app {

struct scene_options {
  scene_config scene;
  std::string background = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
  std::uint64_t start = 0;
  std::string out;
};

void add_scene_command(CLI::App& app, scene_options& opts);
[[nodiscard]] int run_scene(const scene_options& opts);

}  // namespace vlcache::app
