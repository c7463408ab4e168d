#pragma once
/// \file
/// `vlcache encode`: the projected features (and on request every hidden
/// state) of one image, written as safetensors for parity checks against a
/// Python stack.

#include <string>

#include <CLI/CLI.hpp>

namespace vlcache::app {

struct encode_options {
  std::string model = "tiny";
  std::string image;
  std::string out;
  bool hidden_states = false;
  bool pad_to_square = false;
  std::string device = "cpu";
  std::string dtype = "f32";
  int threads = 0;
};

void add_encode_command(CLI::App& app, encode_options& opts);
[[nodiscard]] int run_encode(const encode_options& opts);

}  // namespace vlcache::app
