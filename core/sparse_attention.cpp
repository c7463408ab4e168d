#include "core/sparse_attention.hpp"

#include "core/detail_simd.hpp"

#include <algorithm>
#include <cstring>

namespace vlcache {
namespace {

using simd::load8;
using simd::store8;
using simd::v8f;

}  // namespace

void store_keys(const attention_frame& f, const attention_shape& s, const float* keys,
                const std::int64_t* tokens, int count) {
  const int w = s.width();
  for (int j = 0; j < count; ++j)
    for (int c = 0; c < w; ++c)  // c = head * head_dim + d: row c of the transposed keys
      f.k_t[static_cast<std::int64_t>(c) * s.tokens + tokens[j]] = keys[static_cast<std::int64_t>(j) * w + c];
}

void attention_scores(const attention_frame& f, const attention_shape& s, int head, float* scores) {
  const int w = s.width(), dh = s.head_dim, n = s.tokens;
  float* base = scores + f.score_offset + static_cast<std::int64_t>(head) * f.m * n;
  const float* kt = f.k_t + static_cast<std::int64_t>(head) * dh * n;
  for (int i = 0; i < f.m; ++i) {
    const float* q = f.q + static_cast<std::int64_t>(i) * w + head * dh;
    float* row = base + static_cast<std::int64_t>(i) * n;
    std::fill(row, row + n, 0.0f);
    for (int d = 0; d < dh; ++d) {
      const float qd = q[d];
      const float* k = kt + static_cast<std::int64_t>(d) * n;
      for (int t = 0; t < n; ++t) row[t] += qd * k[t];
    }
  }
}

namespace {
/// One query's weighted sum over all values, VECS x 8 dims held in registers.
template <int VECS>
void weighted_sum(const float* p, const float* v, int tokens, int width, float* out) {
  v8f acc[VECS] = {};
  for (int t = 0; t < tokens; ++t) {
    const float pt = p[t];
    const float* vt = v + static_cast<std::int64_t>(t) * width;
#pragma GCC unroll 16
    for (int j = 0; j < VECS; ++j) acc[j] += pt * load8(vt + 8 * j);
  }
  for (int j = 0; j < VECS; ++j) store8(out + 8 * j, acc[j]);
}
}  // namespace

void attention_apply(const attention_frame& f, const attention_shape& s, int head, const float* probs) {
  const int w = s.width(), dh = s.head_dim, n = s.tokens;
  const float* base = probs + f.score_offset + static_cast<std::int64_t>(head) * f.m * n;
  const float* v = f.v + head * dh;
  for (int i = 0; i < f.m; ++i) {
    const float* p = base + static_cast<std::int64_t>(i) * n;
    float* out = f.out + static_cast<std::int64_t>(i) * w + head * dh;
    switch (dh) {
      case 32: weighted_sum<4>(p, v, n, w, out); break;
      case 64: weighted_sum<8>(p, v, n, w, out); break;
      case 128: weighted_sum<16>(p, v, n, w, out); break;
      default:
        std::fill(out, out + dh, 0.0f);
        for (int t = 0; t < n; ++t)
          for (int d = 0; d < dh; ++d) out[d] += p[t] * v[static_cast<std::int64_t>(t) * w + d];
    }
  }
}

}  // namespace vlcache
