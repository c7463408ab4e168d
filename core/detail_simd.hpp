#pragma once
/// \file
/// Eight (or sixteen) floats as one value (GCC vector extension): kernels
/// keep these in vector registers (AVX2 ymm, AVX-512 zmm) without
/// intrinsics. Internal to core/.

#include <cstring>

namespace vlcache::simd {

using v8f = float __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }

#if defined(__AVX512F__)
/// Sixteen floats: one zmm register, where the build machine has AVX-512.
using v16f = float __attribute__((vector_size(64)));
#endif

/// Loads and stores for any of these vector types: kernels written once
/// for a vector width V (lanes = sizeof(V) / sizeof(float)).
template <class V>
inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}
template <class V>
inline constexpr int lanes = static_cast<int>(sizeof(V) / sizeof(float));

}  // namespace vlcache::simd
