// Example 3: a pipeline spec built in code, validated and run.
//
// The same plain structs the TOML loader fills: two cameras, the tiny
// random-weight encoder, a JSON-lines sink. `vlcache run FILE.toml` does the
// same from a file.
//
//   build/examples/03_pipeline_in_code /usr/share/doc/opencv-doc/examples/data/vtest.avi

#include <cstdio>

#include "graph/pipeline_runner.hpp"
#include "graph/pipeline_spec.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VIDEO\n", argv[0]);
    return 2;
  }
  using namespace vlcache;
  graph::pipeline_spec spec;
  spec.name = "in-code";
  spec.cache.preprocess = preprocess_config::clip(32);
  spec.cache.grid = *patch_grid::make(32, 8);
  spec.cache.gate.mad = 3.0f;
  spec.encoder.model = "tiny";
  spec.flow.progress_seconds = 0;
  for (int i = 0; i < 2; ++i) {
    graph::camera_spec cam;
    cam.name = "cam" + std::to_string(i);
    cam.source = argv[1];
    cam.start_frame = static_cast<std::uint64_t>(300 * i);
    cam.max_frames = 20;
    spec.cameras.push_back(cam);
  }
  spec.sinks.push_back({"jsonl", {{"path", "in_code.jsonl"}}});
  for (const auto& e : graph::validate(spec)) std::fprintf(stderr, "%s\n", e.c_str());
  return graph::run_pipeline(spec, {});
}
