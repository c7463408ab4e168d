#pragma once
/// \file
/// Frames of a real video as the benchmarks feed them to the encoder:
/// preprocessed pixels and patch signatures, several streams taken at
/// different offsets of one video.

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/cache/patch_signatures.hpp"

namespace vlcache::app {

struct stream_frames {
  std::vector<std::vector<float>> pixels;  // CHW per frame
  std::vector<frame_signatures> sigs;
  std::vector<double> sign_ms;             // time to compute each frame's signatures
};

/// `streams` streams of `frames` frames each (every `stride`-th frame from
/// `start + s * offset`); all streams are cut to the shortest, at least 2.
/// `estimate_noise`: the signatures carry each frame's noise estimate (a
/// gate with noise_factor needs it).
[[nodiscard]] expected<std::vector<stream_frames>> load_stream_frames(const std::string& video, int streams, int start,
                                                                      int offset, int frames, int stride,
                                                                      int image_size, int patch_size,
                                                                      bool estimate_noise = false);

}  // namespace vlcache::app
