#include "core/kernels/incremental_attention.hpp"

#include "core/base/simd.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vlcache {
namespace {

using simd::exp_sum;
using simd::load8;
using simd::store8;
using simd::v8f;
#if defined(__AVX512F__)
// Sixteen floats per register halve the loads and FMAs of the two loops
// that dominate an update (scores against the changed keys, and the
// weighted sums over their values) where the machine has AVX-512.
using simd::v16f;
inline v16f load16(const float* p) { return simd::load<v16f>(p); }
inline void store16(float* p, v16f v) { simd::store(p, v); }
#endif

/// Exact softmax-weighted sum of one (query, head) over every stored key.
void recompute_row(const attention_state& st, const attention_shape& s, std::int64_t query, int head,
                   float* out, std::vector<float>& buf) {
  const int w = s.width(), dh = s.head_dim, n = s.tokens, padded = (n + 7) / 8 * 8;
  buf.assign(static_cast<std::size_t>(2 * padded), -1e30f);
  float* scores = buf.data();
  float* e = scores + padded;
  const float* q = st.q + query * w + head * dh;
  const float* kt = st.k_t + static_cast<std::int64_t>(head) * dh * n;
  std::fill(scores, scores + n, 0.0f);
  for (int d = 0; d < dh; ++d) {
    const float qd = q[d];
    const float* k = kt + static_cast<std::int64_t>(d) * n;
    for (int t = 0; t < n; ++t) scores[t] += qd * k[t];
  }
  const float m = *std::max_element(scores, scores + n);
  const float z = exp_sum(scores, m, n, e);
  float* num = st.num + query * w + head * dh;
  for (int d = 0; d < dh; d += 8) {
    v8f acc{};
    for (int t = 0; t < n; ++t) acc += e[t] * load8(st.v + static_cast<std::int64_t>(t) * w + head * dh + d);
    store8(num + d, acc);
    store8(out + d, acc / z);
  }
  st.m[query * s.heads + head] = m;
  st.z[query * s.heads + head] = z;
}

/// Scores of one query against the changed keys, old and new (transposed,
/// [head_dim, padded]): vector FMAs along the keys, two keys blocks and two
/// dimensions at a time so eight sums are in flight (one chain would wait on
/// the FMA latency at every step).
void change_scores(const float* q, const float* ko, const float* kn, int dh, int padded, float* s_old,
                   float* s_new) {
  int j = 0;
#if defined(__AVX512F__)
  for (; j + 16 <= padded; j += 16) {  // sixteen keys per register, four sums in flight
    v16f a0{}, a1{}, c0{}, c1{};
    for (int d = 0; d < dh; d += 2) {
      const float q0 = q[d], q1 = q[d + 1];
      const float* o0 = ko + static_cast<std::int64_t>(d) * padded + j;
      const float* n0 = kn + static_cast<std::int64_t>(d) * padded + j;
      a0 += q0 * load16(o0);
      a1 += q1 * load16(o0 + padded);
      c0 += q0 * load16(n0);
      c1 += q1 * load16(n0 + padded);
    }
    store16(s_old + j, a0 + a1);
    store16(s_new + j, c0 + c1);
  }
#endif
  for (; j < padded; j += 16) {
    const bool two = j + 8 < padded;
    v8f a0{}, a1{}, b0{}, b1{}, c0{}, c1{}, d0{}, d1{};
    for (int d = 0; d < dh; d += 2) {
      const float q0 = q[d], q1 = q[d + 1];
      const float* o0 = ko + static_cast<std::int64_t>(d) * padded + j;
      const float* n0 = kn + static_cast<std::int64_t>(d) * padded + j;
      a0 += q0 * load8(o0);
      a1 += q1 * load8(o0 + padded);
      c0 += q0 * load8(n0);
      c1 += q1 * load8(n0 + padded);
      if (two) {
        b0 += q0 * load8(o0 + 8);
        b1 += q1 * load8(o0 + padded + 8);
        d0 += q0 * load8(n0 + 8);
        d1 += q1 * load8(n0 + padded + 8);
      }
    }
    store8(s_old + j, a0 + a1);
    store8(s_new + j, c0 + c1);
    if (two) {
      store8(s_old + j + 8, b0 + b1);
      store8(s_new + j + 8, d0 + d1);
    }
  }
}

/// num = (num - sum e_old v_old) * f + sum e_new v_new, out = num / z, for
/// one head of VECS vectors of type V held in registers (independent sums).
template <class V, int VECS>
void update_sum(float* num, float* out, const float* e_old, const float* v_old, const float* e_new,
                const float* v_new, int n, int w, float f, float z) {
  constexpr int L = simd::lanes<V>;
  V acc[VECS];
  for (int i = 0; i < VECS; ++i) acc[i] = simd::load<V>(num + L * i);
  for (int t = 0; t < n; ++t) {
    const float e = e_old[t];
    const float* v = v_old + static_cast<std::int64_t>(t) * w;
#pragma GCC unroll 16
    for (int i = 0; i < VECS; ++i) acc[i] -= e * simd::load<V>(v + L * i);
  }
  for (int i = 0; i < VECS; ++i) acc[i] *= f;
  for (int t = 0; t < n; ++t) {
    const float e = e_new[t];
    const float* v = v_new + static_cast<std::int64_t>(t) * w;
#pragma GCC unroll 16
    for (int i = 0; i < VECS; ++i) acc[i] += e * simd::load<V>(v + L * i);
  }
  for (int i = 0; i < VECS; ++i) {
    simd::store(num + L * i, acc[i]);
    simd::store(out + L * i, acc[i] / z);
  }
}

void update_sum_any(float* num, float* out, const float* e_old, const float* v_old, const float* e_new,
                    const float* v_new, int n, int w, int dh, float f, float z) {
#if defined(__AVX512F__)
  switch (dh) {
    case 32: update_sum<v16f, 2>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    case 64: update_sum<v16f, 4>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    case 128: update_sum<v16f, 8>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    default: break;
  }
#endif
  switch (dh) {
    case 32: update_sum<v8f, 4>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    case 64: update_sum<v8f, 8>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    case 128: update_sum<v8f, 16>(num, out, e_old, v_old, e_new, v_new, n, w, f, z); return;
    default: break;
  }
  for (int d = 0; d < dh; d += 8) {
    v8f acc = load8(num + d);
    for (int t = 0; t < n; ++t) acc -= e_old[t] * load8(v_old + static_cast<std::int64_t>(t) * w + d);
    acc *= f;
    for (int t = 0; t < n; ++t) acc += e_new[t] * load8(v_new + static_cast<std::int64_t>(t) * w + d);
    store8(num + d, acc);
    store8(out + d, acc / z);
  }
}

}  // namespace

int attention_update(const attention_state& st, const attention_shape& s, const attention_change& c,
                     const std::int64_t* queries, std::int64_t count, std::int64_t first, std::int64_t last,
                     float* out) {
  const int w = s.width(), dh = s.head_dim, h = s.heads, n = c.count, padded = c.padded();
  std::vector<float> buf(static_cast<std::size_t>(4 * padded)), row;
  float* s_old = buf.data();
  float* s_new = s_old + padded;
  float* e_old = s_new + padded;
  float* e_new = e_old + padded;
  int redone = 0;
  for (std::int64_t item = first; item < last; ++item) {
    const int head = static_cast<int>(item / count);
    const std::int64_t i = item % count, query = queries[i];
    const std::int64_t off = static_cast<std::int64_t>(head) * dh;
    const float* q = st.q + query * w + off;
    float* o = out + i * w + off;
    float* num = st.num + query * w + off;
    float& m = st.m[query * h + head];
    float& z = st.z[query * h + head];
    // Scores against the changed keys, eight keys per vector.
    const float* ko = c.k_old_t + static_cast<std::int64_t>(head) * dh * padded;
    const float* kn = c.k_new_t + static_cast<std::int64_t>(head) * dh * padded;
    change_scores(q, ko, kn, dh, padded, s_old, s_new);
    const float z_left = z - exp_sum(s_old, m, n, e_old);
    // What is left must be well above the rounding of what was removed.
    if (!(z_left > 1e-3f * z)) {
      recompute_row(st, s, query, head, o, row);
      ++redone;
      continue;
    }
    const float top = std::max(m, *std::max_element(s_new, s_new + n));
    const float f = std::exp(m - top);  // rescale to the new maximum: no exponent overflows
    m = top;
    z = z_left * f + exp_sum(s_new, m, n, e_new);
    update_sum_any(num, o, e_old, c.v_old + off, e_new, c.v_new + off, n, w, dh, f, z);
  }
  return redone;
}

}  // namespace vlcache
