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

using v8i = int __attribute__((vector_size(32)));

/// exp of eight floats: Cephes' expf (range reduction by ln 2, degree-6
/// polynomial, about 1 ulp); arguments are clamped to [-87.3, 88.4].
inline v8f exp8(v8f x) {
  const v8f hi = v8f{} + 88.3762626647949f, lo = v8f{} - 87.3365478515625f;
  x = x < hi ? x : hi;
  x = x > lo ? x : lo;
  const v8f fx = x * 1.44269504088896341f + 0.5f;
  v8f fn = __builtin_convertvector(__builtin_convertvector(fx, v8i), v8f);
  fn = fn > fx ? fn - 1.0f : fn;  // floor
  x = x - fn * 0.693359375f + fn * 2.12194440e-4f;
  const v8f x2 = x * x;
  v8f y = x * 1.9875691500e-4f + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * x2 + x + 1.0f;
  const v8i bits = (__builtin_convertvector(fn, v8i) + 127) << 23;
  v8f scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

/// The sum of a vector's lanes.
inline float lane_sum(v8f v) {
  float a[8];
  store8(a, v);
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/// e[j] = exp(s[j] - m) for j < n (e may be s); returns their sum, kept in
/// eight running lanes (one running scalar made every add wait on the one
/// before). The last partial vector goes through a local copy, so neither
/// array needs padding.
inline float exp_sum(const float* s, float m, int n, float* e) {
  const int whole = n / 8 * 8;
  v8f acc{};
  for (int j = 0; j < whole; j += 8) {
    const v8f x = exp8(load8(s + j) - m);
    store8(e + j, x);
    acc += x;
  }
  if (whole < n) {
    float tail[8] = {};
    std::memcpy(tail, s + whole, sizeof(float) * static_cast<std::size_t>(n - whole));
    v8f x = exp8(load8(tail) - m);
    std::memcpy(e + whole, &x, sizeof(float) * static_cast<std::size_t>(n - whole));
    for (int j = n - whole; j < 8; ++j) x[j] = 0.0f;
    acc += x;
  }
  return lane_sum(acc);
}

/// The largest of a vector's lanes.
inline float lane_max(v8f v) {
  float a[8];
  store8(a, v);
  float best = a[0];
  for (float x : a) best = x > best ? x : best;
  return best;
}

/// The largest of s[0..n), n >= 1, eight lanes at a time.
inline float max_of(const float* s, int n) {
  const int whole = n / 8 * 8;
  float best = s[0];
  if (whole > 0) {
    v8f mx = load8(s);
    for (int j = 8; j < whole; j += 8) {
      const v8f x = load8(s + j);
      mx = x > mx ? x : mx;
    }
    best = lane_max(mx);
  }
  for (int j = whole; j < n; ++j) best = s[j] > best ? s[j] : best;
  return best;
}

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
