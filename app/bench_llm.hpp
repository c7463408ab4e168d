#pragma once
/// \file
/// `vlcache bench llm`: over the visual-token stream of a real video (the
/// sparse encoder's output, as the pipeline produces it), a full prefill and
/// a prefill with KV reuse side by side for every frame, with the drift of
/// next-token distributions and greedy answers against the full prefill.

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/models/tokenizer.hpp"

namespace vlcache::app {

struct bench_llm_options {
  std::string model = "vit-b16";
  std::string tokenizer;
  std::string video = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
  std::string question = "How many people are walking in the street?";
  std::string prompt_template = default_prompt_template;
  int frames = 30;
  int stride = 1;
  int start = 0;
  int streams = 1;
  int stream_offset = 150;
  int answer_tokens = 8;
  int recompute_first = 4;
  int recompute_last = 0;
  int recompute_deviation = 0;
  double change_tolerance = 0.0;
  int full_every = 0;
  int threads = 0;
  std::string dtype = "f32";  ///< the language model's
  std::string json;
  std::string plot;
  std::vector<int> sweep_recompute_first;
  std::vector<int> sweep_recompute_last;
};

void add_bench_llm_command(CLI::App& bench, bench_llm_options& opts);
[[nodiscard]] int run_bench_llm(const bench_llm_options& opts);

}  // namespace vlcache::app
