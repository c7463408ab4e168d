#include "app/scene_command.hpp"

#include <cstdio>

#include "connectors/scene_video.hpp"

namespace vlcache::app {

void add_scene_command(CLI::App& app, scene_options& o) {
  auto* c = app.add_subcommand("scene", "Render a scene with known answers over a real video: PNG frames and truth");
  c->add_option("--seed", o.scene.seed, "Seed of the schedule (and of the background window)")->default_val(1);
  c->add_option("--frames", o.scene.frames, "Frames to render")->default_val(200);
  c->add_option("--size", o.scene.size, "Frame side in pixels")->default_val(160);
  c->add_option("--max-objects", o.scene.max_objects, "Shapes in view at once (0-4)")->default_val(4);
  c->add_option("--min-radius", o.scene.min_radius, "Smallest half-size of a shape, pixels")->default_val(o.scene.min_radius);
  c->add_option("--max-radius", o.scene.max_radius, "Largest half-size of a shape, pixels")->default_val(o.scene.max_radius);
  c->add_option("--max-speed", o.scene.max_speed, "Fastest motion, pixels per frame (the blur's length)")
      ->default_val(o.scene.max_speed);
  c->add_option("--idle-share", o.scene.idle_share, "Share of its time a shape stands still")
      ->default_val(o.scene.idle_share);
  c->add_option("--background", o.background, "Video whose frames are the background")->default_val(o.background);
  c->add_option("--start", o.start, "First background frame")->default_val(0);
  c->add_option("--out", o.out, "Output folder (frames/%06d.png, truth.jsonl, scene.json)")->required();
}

int run_scene(const scene_options& o) {
  auto sc = scene::make(o.scene);
  if (!sc) {
    std::fprintf(stderr, "error: %s\n", sc.err().message.c_str());
    return 2;
  }
  auto written = connectors::write_scene(*sc, {o.background, o.start}, o.out);
  if (!written) {
    std::fprintf(stderr, "error: %s\n", written.err().message.c_str());
    return 1;
  }
  std::printf("scene seed %llu: %d frames, %d questions with answers, frames at %s\n",
              static_cast<unsigned long long>(o.scene.seed), written->frames, written->questions,
              written->frames_pattern.c_str());
  return 0;
}

}  // namespace vlcache::app
