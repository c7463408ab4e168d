#include "core/sparse_attention.hpp"

#include <cstring>

namespace vlcache {
namespace {

using v8f = float __attribute__((vector_size(32)));
inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

void attention_scores(const attention_frame& f, const attention_shape& s, int head, float* scores) {
  const int w = s.width(), dh = s.head_dim;
  const int off = head * dh;
  float* base = scores + f.score_offset + static_cast<std::int64_t>(head) * f.m * s.tokens;
  for (int i = 0; i < f.m; ++i) {
    const float* q = f.q + static_cast<std::int64_t>(i) * w + off;
    float* row = base + static_cast<std::int64_t>(i) * s.tokens;
    for (int t = 0; t < s.tokens; ++t) {
      const float* k = f.k + static_cast<std::int64_t>(t) * w + off;
      float dot = 0.0f;
      if (dh % 8 == 0) {
        v8f acc = {};
        for (int d = 0; d < dh; d += 8) acc += load8(q + d) * load8(k + d);
        for (int j = 0; j < 8; ++j) dot += acc[j];
      } else {
        for (int d = 0; d < dh; ++d) dot += q[d] * k[d];
      }
      row[t] = dot;
    }
  }
}

void attention_apply(const attention_frame& f, const attention_shape& s, int head, const float* probs) {
  const int w = s.width(), dh = s.head_dim;
  const int off = head * dh;
  const float* base = probs + f.score_offset + static_cast<std::int64_t>(head) * f.m * s.tokens;
  std::vector<float> acc(static_cast<std::size_t>(dh));
  for (int i = 0; i < f.m; ++i) {
    const float* p = base + static_cast<std::int64_t>(i) * s.tokens;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int t = 0; t < s.tokens; ++t) {
      const float pt = p[t];
      const float* v = f.v + static_cast<std::int64_t>(t) * w + off;
      for (int d = 0; d < dh; ++d) acc[d] += pt * v[d];
    }
    std::memcpy(f.out + static_cast<std::int64_t>(i) * w + off, acc.data(), sizeof(float) * dh);
  }
}

}  // namespace vlcache
