#pragma once
/// \file
/// `vlcache bench answers`: rendered scenes with known answers (vlcache
/// scene) answered in one run two ways, (a) full encoder and full prefill
/// for every answered frame, (b) the way `vlcache run` answers (reference
/// gate, drift control, sparse encoder, KV reuse across a stream's answers,
/// the pipeline's defaults), both compared with the truth and with each
/// other, at 10 FPS (every frame) and 1 FPS (every 10th).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vlcache::app {

struct bench_answers_options {
  std::string model;                ///< a LLaVA snapshot folder
  std::vector<std::string> scenes;  ///< folders written by `vlcache scene`
  std::vector<int> strides{1, 10};  ///< 1 = every frame (10 FPS), 10 = 1 FPS
  int every = 10;                   ///< answer every Nth frame the encoder sees (the pipeline's default)
  int frames = 0;                   ///< frames of each scene read; 0 = all
  int max_new_tokens = 4;
  int threads = 0;
  double layer_tolerance = 0.0;  ///< the cached path's layer-wise recompute, as [encoder] layer_tolerance
  double attention_tolerance = -1.0;  ///< as [encoder] attention_tolerance (< 0: as layer_tolerance)
  std::string store_dtype = "f32";  ///< the cached path's token store, as [encoder] store_dtype
  double change_tolerance = -1;     ///< the cached path's KV reuse, as [llm] change_tolerance; < 0: its default
  bool keep_kv_current = false;     ///< the cached path updates the image K/V between answers, as [llm] keep_kv_current
  std::string json;
  std::string plot;
  std::string answers;  ///< JSON lines, one per question asked: truth and both answers (to see what fails)
};

void add_bench_answers_command(CLI::App& bench, bench_answers_options& opts);
[[nodiscard]] int run_bench_answers(const bench_answers_options& opts);

}  // namespace vlcache::app
