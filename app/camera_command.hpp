#pragma once
/// \file
/// `vlcache camera`: a camera node. Decodes a video, file sequence or URL
/// with OpenCV and pushes JPEG frames (wire format v1) to a pipeline's
/// ingest over ZeroMQ, paced in real time. ZeroMQ reconnects on its own, so
/// the node survives a pipeline restart; frames it cannot hand over
/// (pipeline gone, queue full) are dropped and counted, and the sequence
/// numbers let the pipeline count what was lost in transit. With
/// --ship-patches it preprocesses, hashes and gates on the camera and sends
/// only the patches that changed (wire encoding 2).

#include <string>

#include <CLI/CLI.hpp>

#include "app/client_keys.hpp"

namespace vlcache::app {

struct camera_options {
  std::string source;
  std::string to;
  std::string stream;
  double fps = 0.0;
  int frames = 0;
  int start = 0;
  int quality = 85;
  bool raw = false;
  /// Patch shipping: preprocess to the encoder's input here, gate locally,
  /// send only the changed patches (and a keyframe every `keyframe_every`).
  bool ship_patches = false;
  int image_size = 224;
  int patch_size = 16;
  bool pad_to_square = false;
  int keyframe_every = 50;
  client_key_paths keys;  ///< CURVE, for a pipeline with [security]
};

void add_camera_command(CLI::App& app, camera_options& opts);
[[nodiscard]] int run_camera(const camera_options& opts);

}  // namespace vlcache::app
