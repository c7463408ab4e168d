// Example 2: encode a video, recomputing only the changed patches.
//
// Builds on example 1: the gate's misses go to the sparse vision encoder,
// which returns every frame's full token sequence (changed tokens
// recomputed, the rest from its per-stream store). Every 10th frame the
// full forward runs too, to show how close the sparse tokens stay.
//
//   build/examples/02_sparse_encoder_over_video VIDEO [MODEL_DIR|PRESET]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "connectors/video_reader.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/models/cache_step.hpp"
#include "core/models/vision_encoder.hpp"

namespace {
double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VIDEO [MODEL]\n", argv[0]);
    return 2;
  }
  using namespace vlcache;
  auto encoder = vision_encoder::load(argc > 2 ? argv[2] : "vit-b16", encoder_options{});
  if (!encoder) {
    std::fprintf(stderr, "%s\n", encoder.err().message.c_str());
    return 1;
  }
  auto& enc = **encoder;
  std::printf("%s\n", enc.description().c_str());
  const auto& cfg = enc.config();
  const auto grid = *patch_grid::make(cfg.image_size, cfg.patch_size);
  const auto engine = *signature_engine::make(grid);
  gate_thresholds thresholds;
  thresholds.mad = 3.0f;
  // The pipeline's cache step: gate, drift control, sparse encode, commit.
  auto step = *cache_step::make(grid, thresholds, drift_config{});

  connectors::video_reader_config source;
  source.source = argv[1];
  source.max_frames = 30;
  auto video = connectors::video_reader::open(source);
  if (!video) {
    std::fprintf(stderr, "%s\n", video.err().message.c_str());
    return 1;
  }
  double lowest = 1.0;
  int checks = 0;
  for (auto frame = (*video)->read(); frame; frame = (*video)->read()) {
    auto input = preprocess(frame->view, preprocess_config::clip(cfg.image_size));
    if (!input) return 1;
    auto sigs = engine.compute(input->rgb_view());
    const auto t0 = std::chrono::steady_clock::now();
    auto out = step.run(enc, {{0, frame->seq, &*sigs, input->pixels.data()}});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!out) {
      std::fprintf(stderr, "%s\n", out.err().message.c_str());
      return 1;
    }
    std::printf("frame %2llu: %3d tokens recomputed in %6.1f ms",
                static_cast<unsigned long long>(frame->seq), (*out)[0].computed, ms);
    if (frame->seq % 10 == 9) {
      auto full = enc.encode_full({input->pixels.data()});
      const double c = cosine((*out)[0].features.to_vector(), (*full)[0].features.to_vector());
      lowest = std::min(lowest, c);
      ++checks;
      std::printf("   cosine to full forward %.5f", c);
    }
    std::printf("\n");
  }
  std::printf("lowest cosine to full forward %.5f over %d checks\n", lowest, checks);
  return checks > 0 ? 0 : 1;
}
