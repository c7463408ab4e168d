#pragma once
/// \file
/// Eight floats as one value (GCC vector extension): kernels keep these in
/// vector registers (AVX2 ymm) without intrinsics. Internal to core/.

#include <cstring>

namespace vlcache::simd {

using v8f = float __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }

}  // namespace vlcache::simd
