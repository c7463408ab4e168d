#pragma once
/// \file
/// A checkpoint's image processor (Hugging Face's preprocessor_config.json)
/// as the preprocessing vlcache runs: resize of the short side, centre
/// crop, mean and std. What vlcache cannot reproduce is refused by name
/// rather than approximated.

#include <string>

#include "core/base/error.hpp"
#include "core/base/preprocess.hpp"

namespace vlcache {

/// Parses the JSON text of `origin` for an encoder whose input side is
/// `image_size`: errors name the key and both values when the processor's
/// crop is not the encoder's input.
[[nodiscard]] expected<preprocess_config> parse_processor_config(const std::string& text, const std::string& origin,
                                                                 int image_size);

}  // namespace vlcache
