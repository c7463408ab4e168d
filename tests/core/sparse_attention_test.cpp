// The recomputed queries' attention scores against a naive product, over
// token counts and query counts that reach every tile of the kernel (whole
// key vectors in pairs and alone, the ragged tail, 1-4 queries a tile).

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/sparse_attention.hpp"

namespace vlcache {
namespace {

TEST(attention_scores, match_a_naive_product_for_every_tile) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  for (int n : {17, 45, 197})
    for (int dh : {8, 64})
      for (int m = 1; m <= 9; ++m) {
        const int h = 2, w = h * dh;
        std::vector<float> q(static_cast<std::size_t>(m) * w), k_t(static_cast<std::size_t>(w) * n);
        for (auto& x : q) x = d(rng);
        for (auto& x : k_t) x = d(rng);
        attention_frame f;
        f.q = q.data();
        f.k_t = k_t.data();
        f.m = m;
        std::vector<float> scores(static_cast<std::size_t>(h) * m * n, -7.0f);
        const attention_shape shape{n, h, dh};
        for (int head = 0; head < h; ++head) attention_scores(f, shape, head, scores.data());
        for (int head = 0; head < h; ++head)
          for (int i = 0; i < m; ++i)
            for (int t = 0; t < n; ++t) {
              double ref = 0;
              for (int e = 0; e < dh; ++e)
                ref += double(q[i * w + head * dh + e]) * k_t[(head * dh + e) * n + t];
              ASSERT_NEAR(scores[(head * m + i) * n + t], ref, 1e-4)
                  << "n=" << n << " dh=" << dh << " m=" << m << " head " << head << " query " << i << " key " << t;
            }
      }
}

}  // namespace
}  // namespace vlcache
