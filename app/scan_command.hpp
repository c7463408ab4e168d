#pragma once
/// \file
/// `vlcache scan`: signatures and reference-gate decisions over a video,
/// with per-frame lines and a hit-rate summary (optionally a threshold sweep).

#include <string>

#include <CLI/CLI.hpp>

namespace vlcache::app {

struct scan_options {
  std::string video;
  std::string config;
  double fps = 0.0;
  int frames = 0;
  int streams = 1;
  int stream_offset = 100;
  bool sweep = false;
  bool quiet = false;
  std::string json;
};

void add_scan_command(CLI::App& app, scan_options& opts);
[[nodiscard]] int run_scan(const scan_options& opts);

}  // namespace vlcache::app
