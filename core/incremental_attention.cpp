#include "core/incremental_attention.hpp"

#include "core/detail_simd.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vlcache {
namespace {

using simd::load8;
using simd::store8;
using simd::v8f;
using v8i = int __attribute__((vector_size(32)));

/// exp of eight floats: Cephes' expf (range reduction by ln 2, degree-6
/// polynomial, about 1 ulp); arguments are clamped to [-87.3, 88.4].
v8f exp8(v8f x) {
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

float hsum(v8f v) {
  float t[8];
  store8(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

float dot(const float* a, const float* b, int n) {
  v8f acc{};
  for (int d = 0; d < n; d += 8) acc += load8(a + d) * load8(b + d);
  return hsum(acc);
}

/// e[j] = exp(s[j] - m) for j < n (s padded to a multiple of 8); returns their sum.
float exps(const float* s, float m, int n, float* e) {
  float sum = 0;
  for (int j = 0; j < n; j += 8) {
    const v8f x = exp8(load8(s + j) - m);
    store8(e + j, x);
  }
  for (int j = 0; j < n; ++j) sum += e[j];
  return sum;
}

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
  const float z = exps(scores, m, n, e);
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
    for (int j = 0; j < padded; j += 8) {
      v8f a{}, b{};
      for (int d = 0; d < dh; ++d) {
        a += q[d] * load8(ko + static_cast<std::int64_t>(d) * padded + j);
        b += q[d] * load8(kn + static_cast<std::int64_t>(d) * padded + j);
      }
      store8(s_old + j, a);
      store8(s_new + j, b);
    }
    const float z_left = z - exps(s_old, m, n, e_old);
    // What is left must be well above the rounding of what was removed.
    if (!(z_left > 1e-3f * z)) {
      recompute_row(st, s, query, head, o, row);
      ++redone;
      continue;
    }
    const float top = std::max(m, *std::max_element(s_new, s_new + n));
    const float f = std::exp(m - top);  // rescale to the new maximum: no exponent overflows
    m = top;
    z = z_left * f + exps(s_new, m, n, e_new);
    for (int d = 0; d < dh; d += 8) {
      v8f acc = load8(num + d);
      for (int j = 0; j < n; ++j) acc -= e_old[j] * load8(c.v_old + static_cast<std::int64_t>(j) * w + off + d);
      acc *= f;
      for (int j = 0; j < n; ++j) acc += e_new[j] * load8(c.v_new + static_cast<std::int64_t>(j) * w + off + d);
      store8(num + d, acc);
      store8(o + d, acc / z);
    }
  }
  return redone;
}

}  // namespace vlcache
