#pragma once
/// \file
/// Shared by the model .cpp files (includes ATen; never include it from a
/// public header): device and dtype names, fixed preset seeds.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "core/base/error.hpp"

namespace vlcache::detail {

/// A fixed seed per preset name, so a preset's random weights never change.
[[nodiscard]] std::uint64_t preset_seed(const std::string& name);
/// "cpu", "cuda" or "cuda:N"; CUDA only when this LibTorch has it.
[[nodiscard]] expected<at::Device> parse_device(const std::string& s);
/// "f32", "f16", "bf16"; reduced precision on CUDA only, except bf16 where
/// the caller allows it on the CPU (the language model: oneDNN runs bf16
/// matrix products on AVX512-BF16 CPUs about 3x faster than f32).
[[nodiscard]] expected<at::ScalarType> parse_dtype(const std::string& s, const at::Device& device,
                                                   bool bf16_on_cpu = false);

}  // namespace vlcache::detail
