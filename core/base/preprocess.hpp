#pragma once
/// \file
/// CLIP preprocessing as Hugging Face's CLIPImageProcessor performs it
/// (PIL bicubic resize of the short side, center crop, rescale by 1/255,
/// mean/std normalisation), and LLaVA's pad-to-square variant
/// (`expand2square` with the mean colour before the processor).
///
/// The resize reproduces Pillow's fixed-point convolution (antialiased
/// bicubic, a = -0.5, 22-bit coefficients, horizontal pass rounded to 8 bits
/// before the vertical pass), so pixels match the Python stack exactly.

#include <array>
#include <cstdint>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/image.hpp"

namespace vlcache {

struct preprocess_config {
  int image_size = 224;     ///< side of the square crop the encoder sees
  int shortest_edge = 224;  ///< the short side is resized to this first
  bool pad_to_square = false;
  std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};

  /// The processor of a CLIP checkpoint with input side `image_size`.
  [[nodiscard]] static preprocess_config clip(int image_size, bool pad_to_square = false);
  [[nodiscard]] status validate() const;
};

/// The encoder input of one frame.
struct preprocessed_image {
  int size = 0;
  std::vector<std::uint8_t> rgb;  ///< size*size*3, HWC, after resize and crop
  std::vector<float> pixels;      ///< 3*size*size, CHW, rescaled and normalised

  /// The crop as an image (what the signatures are computed on).
  [[nodiscard]] image_view rgb_view() const noexcept {
    return image_view{rgb.data(), size, size, 3, 1, 0, channel_order::rgb};
  }
};

/// Errors (state untouched): empty frame, channels != 3, non-8-bit data,
/// an invalid config.
[[nodiscard]] expected<preprocessed_image> preprocess(const image_view& frame,
                                                      const preprocess_config& config);

}  // namespace vlcache
