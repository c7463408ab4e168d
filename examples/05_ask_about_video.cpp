// Example 5: ask a question about a video, frame after frame.
//
// Builds on example 2: the sparse encoder's tokens of each frame go to the
// answerer, which fills them into the LLaVA prompt. Between a stream's
// answers only the image tokens that changed (and the question) go through
// the language model again; the rest of its KV is reused.
//
//   build/examples/05_ask_about_video VIDEO LLAVA_DIR [QUESTION]
//   build/examples/05_ask_about_video VIDEO PRESET TOKENIZER.model [QUESTION]

#include <cstdio>
#include <filesystem>
#include <string>

#include "connectors/video_reader.hpp"
#include "core/models/answerer.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/models/cache_step.hpp"
#include "core/models/vision_encoder.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VIDEO LLAVA_DIR|PRESET [TOKENIZER] [QUESTION]\n", argv[0]);
    return 2;
  }
  using namespace vlcache;
  const std::string model = argv[2];
  const bool preset = !std::filesystem::is_directory(model);
  const std::string tokenizer = preset && argc > 3 ? argv[3] : "";
  const int q_arg = preset ? 4 : 3;
  const std::string question = argc > q_arg ? argv[q_arg] : "How many people are in the street?";

  auto encoder = vision_encoder::load(model, encoder_options{});
  answer_options options;
  options.sampling.max_new_tokens = 8;
  auto llm = answerer::load(model, tokenizer, llm_options{}, options);
  if (!encoder || !llm) {
    std::fprintf(stderr, "%s\n", (!encoder ? encoder.err() : llm.err()).message.c_str());
    return 1;
  }
  auto& enc = **encoder;
  std::printf("%s\n%s\n", enc.description().c_str(), (*llm)->model().description().c_str());
  const auto& cfg = enc.config();
  const auto grid = *patch_grid::make(cfg.image_size, cfg.patch_size);
  const auto engine = *signature_engine::make(grid);
  gate_thresholds thresholds;
  thresholds.mad = 3.0f;
  // The pipeline's cache step: gate, drift control, sparse encode, commit.
  auto step = *cache_step::make(grid, thresholds, drift_config{});

  connectors::video_reader_config source;
  source.source = argv[1];
  source.max_frames = 20;
  auto video = connectors::video_reader::open(source);
  if (!video) {
    std::fprintf(stderr, "%s\n", video.err().message.c_str());
    return 1;
  }
  for (auto frame = (*video)->read(); frame; frame = (*video)->read()) {
    auto pre = preprocess(frame->view, preprocess_config::clip(cfg.image_size));
    auto sigs = engine.compute(pre->rgb_view());
    // Only the changed patches go through the vision transformer...
    auto tokens = step.run(enc, {{0, frame->seq, &*sigs, pre->pixels.data()}});
    if (!tokens) {
      std::fprintf(stderr, "%s\n", tokens.err().message.c_str());
      return 1;
    }
    if (frame->seq % 5 != 0) continue;
    // ...and only their image tokens (and the question) through the language model.
    auto a = (*llm)->ask(0, (*tokens)[0].features, question);
    if (!a) {
      std::fprintf(stderr, "%s\n", a.err().message.c_str());
      return 1;
    }
    std::printf("frame %3llu: %d/%d patches encoded, %d/%d image tokens prefilled%s, prefill %.1f ms: %s%s\n",
                static_cast<unsigned long long>(frame->seq), (*tokens)[0].full ? grid.count() : (*tokens)[0].computed,
                grid.count(), a->image_recomputed, a->image_tokens, a->full_prefill ? " (full)" : "", a->prefill_ms,
                a->random_weights ? "[random weights] " : "", a->text.c_str());
  }
  return 0;
}
