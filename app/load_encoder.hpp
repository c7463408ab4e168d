#pragma once
/// \file
/// Loads the vision encoder for a command; prints the error, or a loud
/// notice when the weights are a random preset.

#include <cstdio>
#include <memory>
#include <string>

#include "core/models/vision_encoder.hpp"

namespace vlcache::app {

inline std::unique_ptr<vision_encoder> load_encoder_or_report(const std::string& model, const std::string& device,
                                                              const std::string& dtype, int threads,
                                                              double layer_tolerance = 0.0,
                                                              const std::string& store_dtype = "f32",
                                                              const std::string& weight_dtype = "f32",
                                                              double attention_tolerance = -1.0) {
  encoder_options o;
  o.attention_tolerance = attention_tolerance;
  o.store_dtype = store_dtype;
  o.weight_dtype = weight_dtype;
  o.layer_tolerance = layer_tolerance;
  o.device = device;
  o.dtype = dtype;
  o.threads = threads;
  auto enc = vision_encoder::load(model, o);
  if (!enc) {
    std::fprintf(stderr, "error: %s\n", enc.err().message.c_str());
    return nullptr;
  }
  if ((*enc)->random_weights())
    std::fprintf(stderr, "NOTICE: %s -- RANDOM weights: speed is real, outputs mean nothing\n",
                 (*enc)->description().c_str());
  return std::move(*enc);
}

}  // namespace vlcache::app
