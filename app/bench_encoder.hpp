#pragma once
/// \file
/// `vlcache bench encoder`: full recompute and sparse recompute side by
/// side over consecutive frames of a real video, one stream and N streams
/// batched, with the pipeline's signatures, gate and drift control.

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace vlcache::app {

struct bench_encoder_options {
  std::string model = "vit-b16";
  std::string video = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
  std::string config;  // pipeline TOML for [gate]; default gate otherwise
  int frames = 40;
  int stride = 1;
  int streams = 4;
  int stream_offset = 150;
  int start = 0;
  int refresh_interval = 0;
  int max_token_age = 0;
  double drift_budget = 0.0;
  int top_r = 0;
  double layer_tolerance = 0.0;         ///< the encoder's layer-wise recompute (0: off)
  double attention_tolerance = -1.0;    ///< its attention-output test (< 0: as layer_tolerance; 0: none)
  std::string store_dtype = "f32";      ///< the token store's keys and values: f32, f16 or i8
  std::string weight_dtype = "f32";     ///< the layers' packed weights: f32 or f16
  std::vector<double> sweep_tolerance;  ///< one-stream runs at each layer tolerance
  bool defaults = false;                ///< a pipeline's settings without tuning keys, controller included
  int threads = 0;
  std::string device = "cpu";
  std::string dtype = "f32";
  std::string json;
  std::string plot;               ///< PNG of the per-frame series (and PLOT_sweep.png)
  std::vector<double> sweep_mad;  ///< MAD thresholds for the sweep
  int view_memory = 0;            ///< also run one stream with view memory keeping this many views
  double view_cut = 0.5, view_match = 0.5;  ///< its cut_share and match_share
};

void add_bench_encoder_command(CLI::App& bench, bench_encoder_options& opts);
[[nodiscard]] int run_bench_encoder(const bench_encoder_options& opts);

}  // namespace vlcache::app
