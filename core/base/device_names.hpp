#pragma once
/// \file
/// The device and dtype names a model option takes ("cpu", "cuda", "cuda:N";
/// "f32", "f16", "bf16"), checked without LibTorch: the spec layer refuses a
/// bad name before anything loads, and the models map the same names to
/// ATen (core/models/detail/torch_setup), so both accept exactly the same text.

#include <string>

#include "core/base/error.hpp"

// Errors quote the name and list what is taken; the caller names the key.

namespace vlcache {

struct device_name {
  bool cuda = false;
  int index = 0;  ///< cuda:N
};
enum class dtype_name { f32, f16, bf16 };

[[nodiscard]] expected<device_name> parse_device_name(const std::string& s);
/// Reduced precision runs on CUDA only, except bf16 where the caller allows
/// it on the CPU (the language model: oneDNN's bf16 products on AVX512-BF16).
[[nodiscard]] expected<dtype_name> parse_dtype_name(const std::string& s, const device_name& device,
                                                    bool bf16_on_cpu = false);
/// "f32" or "f16": how the CPU kernels hold a token store or a weight set
/// (store_dtype, weight_dtype). True for half precision.
[[nodiscard]] expected<bool> parse_half_name(const std::string& s);
/// How the CPU kernels hold a token store's keys and values
/// ([encoder] store_dtype): "f32", "f16" (IEEE half) or "i8" (int8 with
/// an f32 scale per token and head).
enum class store_precision { f32, f16, i8 };
[[nodiscard]] expected<store_precision> parse_store_precision(const std::string& s);
[[nodiscard]] const char* to_string(store_precision p) noexcept;

}  // namespace vlcache
