#pragma once
/// \file
/// `vlcache tune`: measures one model on sample footage across gates,
/// recompute modes and dtypes and the ladder of layer tolerances; prints the
/// speed/fidelity front, plots it, and writes the profile a pipeline takes
/// its settings from (graph/fidelity_profile, docs/fidelity.md).

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vlcache::app {

struct tune_options {
  std::string model = "vit-b16";
  std::vector<std::string> videos;  ///< video files (or image patterns)
  std::vector<std::string> scenes;  ///< rendered scene folders: their frames join the footage
  double target = 0.999;            ///< token cosine at the percentile
  double percentile = 1.0;
  double max_err_over_naive = 0;    ///< also bound the relative error (0: not)
  double answer_agreement = 0.99;   ///< with scenes: answers at the start rung that must agree
  int frames = 30;                  ///< per clip
  std::vector<int> strides{1, 10};  ///< each clip at these strides (10 = 1 FPS on vtest)
  int threads = 0;
  std::string out;                  ///< the profile (required)
  std::string plot;                 ///< PNG of the front
  std::string json;
};

void add_tune_command(CLI::App& app, tune_options& o);
[[nodiscard]] int run_tune(const tune_options& o);

}  // namespace vlcache::app
