#pragma once
/// \file
/// `vlcache ask`: one answer about one image, with token ids and timings,
/// like llama.cpp's one-shot tools.

#include <string>

#include <CLI/CLI.hpp>

#include "core/models/answerer.hpp"

namespace vlcache::app {

struct ask_options {
  std::string model;
  std::string tokenizer;  ///< default: the snapshot's tokenizer.model
  std::string image;
  std::string question;
  std::string prompt_template = default_prompt_template;
  int max_new_tokens = 32;
  double temperature = 0.0;
  double top_p = 1.0;
  std::uint64_t seed = 0;
  bool pad_to_square = false;
  bool json = false;
  std::string device = "cpu";
  std::string dtype = "f32";
  std::string llm_dtype;  ///< the language model's; default: dtype
  int threads = 0;
};

void add_ask_command(CLI::App& app, ask_options& opts);
[[nodiscard]] int run_ask(const ask_options& opts);

}  // namespace vlcache::app
