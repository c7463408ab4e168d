// Example 1: which patches of a camera frame changed?
//
// Reads a video, preprocesses each frame for a 224/16 encoder, computes the
// per-patch signatures and asks the reference gate which tokens would have
// to be recomputed. Prints one line per frame.
//
//   build/examples/01_signatures_over_video /usr/share/doc/opencv-doc/examples/data/vtest.avi

#include <cstdio>

#include "connectors/video_reader.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VIDEO\n", argv[0]);
    return 2;
  }
  using namespace vlcache;
  const auto grid = *patch_grid::make(224, 16);
  const auto engine = *signature_engine::make(grid);
  gate_thresholds thresholds;
  thresholds.mad = 3.0f;  // mean absolute difference, out of 255
  auto gate = *reference_gate::make(grid, thresholds);

  connectors::video_reader_config source;
  source.source = argv[1];
  source.max_frames = 50;
  auto video = connectors::video_reader::open(source);
  if (!video) {
    std::fprintf(stderr, "%s\n", video.err().message.c_str());
    return 1;
  }
  for (auto frame = (*video)->read(); frame; frame = (*video)->read()) {
    auto input = preprocess(frame->view, preprocess_config::clip(224));
    if (!input) return 1;
    auto sigs = engine.compute(input->rgb_view());
    auto decision = gate.decide(0, *sigs);
    // Pretend every miss was recomputed: its signature becomes the reference.
    (void)gate.commit(0, *sigs, decision->miss_positions, frame->seq);
    std::printf("frame %3llu: %3d of %d patches changed\n", static_cast<unsigned long long>(frame->seq),
                decision->misses(), grid.count());
  }
  std::printf("hit rate %.1f%%\n", 100.0 * gate.stats(0).hit_rate());
  return 0;
}
