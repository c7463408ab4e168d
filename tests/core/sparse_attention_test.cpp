// The recomputed queries' attention scores against a naive product, over
// token counts and query counts that reach every tile of the kernel (whole
// key vectors in pairs and alone, the ragged tail, 1-4 queries a tile); the
// softmax of one head's rows against one in double precision; the weighted
// sums; the new keys written one head at a time.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <vector>

#include "core/kernels/sparse_attention.hpp"

namespace vlcache {
namespace {

enum class store { f32, half, i8 };
const char* name(store s) { return s == store::f32 ? "f32" : s == store::half ? "half" : "i8"; }
void PrintTo(store s, std::ostream* os) { *os << name(s); }  // the CTest entry names the store

// Every store: f32 keys, half-precision keys (compared against the product
// with the keys as rounded to half) and 8-bit keys written by store_keys
// (against the product with the stored keys times their scales, each of
// which within half a step of the key it holds).
class attention_scores_store : public ::testing::TestWithParam<store> {};

TEST_P(attention_scores_store, match_a_naive_product_for_every_tile) {
  const store kind = GetParam();
  const bool half = kind == store::half;
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  for (int n : {17, 45, 197})
    for (int dh : {8, 64})
      for (int m = 1; m <= 9; ++m) {
        const int h = 2, w = h * dh;
        std::vector<float> q(static_cast<std::size_t>(m) * w), k_t(static_cast<std::size_t>(w) * n);
        for (auto& x : q) x = d(rng);
        for (auto& x : k_t) x = d(rng);
        std::vector<std::uint16_t> k_t16(k_t.size());
        std::vector<std::int8_t> k_t8(k_t.size());
        std::vector<float> k_scale(static_cast<std::size_t>(h) * n, -1.0f);
        attention_frame f;
        f.q = q.data();
        if (kind == store::i8) {
          f.k_t8 = k_t8.data();
          f.k_scale = k_scale.data();
          std::vector<float> rows(static_cast<std::size_t>(n) * w);  // the keys as the QKV projection writes them
          std::vector<std::int64_t> tokens(static_cast<std::size_t>(n));
          for (int t = 0; t < n; ++t) {
            tokens[static_cast<std::size_t>(t)] = t;
            for (int c = 0; c < w; ++c) rows[static_cast<std::size_t>(t) * w + c] = k_t[static_cast<std::size_t>(c) * n + t];
          }
          store_keys(f, attention_shape{n, h, dh}, rows.data(), tokens.data(), n);
          for (int c = 0; c < w; ++c)
            for (int t = 0; t < n; ++t) {
              const float scale = k_scale[static_cast<std::size_t>(c / dh) * n + t];
              const float held = k_t8[static_cast<std::size_t>(c) * n + t] * scale;
              ASSERT_LE(std::fabs(held - k_t[static_cast<std::size_t>(c) * n + t]), 0.5f * scale + 1e-6f)
                  << "key " << t << " column " << c;
              k_t[static_cast<std::size_t>(c) * n + t] = held;  // the reference's keys
            }
        } else if (half) {
          to_half(k_t.data(), k_t16.data(), static_cast<std::int64_t>(k_t.size()));
          from_half(k_t16.data(), k_t.data(), static_cast<std::int64_t>(k_t.size()));  // the reference's keys
          f.k_t16 = k_t16.data();
        } else {
          f.k_t = k_t.data();
        }
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
                  << name(kind) << " n=" << n << " dh=" << dh << " m=" << m << " head " << head
                  << " query " << i << " key " << t;
            }
      }
}
INSTANTIATE_TEST_SUITE_P(stores, attention_scores_store, ::testing::Values(store::f32, store::half, store::i8),
                         [](const auto& info) { return name(info.param); });

// The weighted sums against a naive sum, for every store (half values
// against the sum over the values as rounded to half, 8-bit ones against
// the sum over the int8 values times their scales), over head widths
// that reach every tile width and the plain loop, and 1-9 queries (whole
// tiles and the rest one at a time); other heads' outputs untouched.
TEST_P(attention_scores_store, weighted_sums_match_a_naive_sum_for_every_tile) {
  const store kind = GetParam();
  const bool half = kind == store::half;
  std::mt19937 rng(11);
  std::normal_distribution<float> d;
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const int n = 45, h = 2;
  for (int dh : {8, 16, 24, 32, 64, 128})
    for (int m = 1; m <= 9; ++m) {
      const int w = h * dh;
      std::vector<float> v(static_cast<std::size_t>(n) * w), probs(static_cast<std::size_t>(h) * m * n);
      for (auto& x : v) x = d(rng);
      for (auto& x : probs) x = u(rng);
      std::vector<std::uint16_t> v16(v.size());
      std::vector<std::int8_t> v8(v.size());
      std::vector<float> v_scale(static_cast<std::size_t>(n) * h);
      std::vector<float> out(static_cast<std::size_t>(m) * w, -3.0f);
      attention_frame f;
      f.out = out.data();
      f.m = m;
      if (kind == store::i8) {
        // Written as the encoder does, a head at a time, the rows in reverse
        // token order: row j holds token n-1-j.
        f.v8 = v8.data();
        f.v_scale = v_scale.data();
        std::vector<float> rows(v.size());
        std::vector<std::int64_t> tokens(static_cast<std::size_t>(n));
        for (int j = 0; j < n; ++j) {
          tokens[static_cast<std::size_t>(j)] = n - 1 - j;
          std::copy_n(v.data() + static_cast<std::size_t>(n - 1 - j) * w, w, rows.data() + static_cast<std::size_t>(j) * w);
        }
        for (int hh = 0; hh < h; ++hh) store_values_i8(f, attention_shape{n, h, dh}, rows.data(), tokens.data(), n, hh);
        for (int t = 0; t < n; ++t)
          for (int c = 0; c < w; ++c) {
            const std::size_t i = static_cast<std::size_t>(t) * w + c;
            const float scale = v_scale[static_cast<std::size_t>(t) * h + c / dh];
            ASSERT_LE(std::fabs(v8[i] * scale - v[i]), 0.5f * scale + 1e-6f) << "value " << t << " column " << c;
            v[i] = v8[i] * scale;  // the reference's values
          }
      } else if (half) {
        to_half(v.data(), v16.data(), static_cast<std::int64_t>(v.size()));
        from_half(v16.data(), v.data(), static_cast<std::int64_t>(v.size()));
        f.v16 = v16.data();
      } else {
        f.v = v.data();
      }
      const int head = 1;
      attention_apply(f, attention_shape{n, h, dh}, head, probs.data());
      for (int i = 0; i < m; ++i)
        for (int c = 0; c < w; ++c) {
          const float got = out[static_cast<std::size_t>(i) * w + c];
          if (c / dh != head) {
            ASSERT_EQ(got, -3.0f) << "dh=" << dh << " m=" << m << ": head 0's output written";
            continue;
          }
          double ref = 0;
          for (int t = 0; t < n; ++t) ref += double(probs[(head * m + i) * n + t]) * v[t * w + c];
          ASSERT_NEAR(got, ref, 1e-4) << name(kind) << " dh=" << dh << " m=" << m << " query " << i
                                      << " column " << c;
        }
    }
}

// A head of zeros keeps scale 0 and zeros (no division by zero); a head's
// largest magnitude lands on +-127; the others round to the nearest step.
TEST(quantize_row, scales_each_head_by_its_largest_magnitude) {
  const std::vector<float> row{0, 0, 0, 0, 1.0f, -2.54f, 0.004f, 0.5f};
  std::vector<std::int8_t> q(row.size(), 99);
  std::vector<float> scales(2, -1.0f);
  quantize_row(row.data(), 2, 4, q.data(), scales.data());
  EXPECT_EQ(scales[0], 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q[static_cast<std::size_t>(i)], 0);
  EXPECT_FLOAT_EQ(scales[1], 2.54f / 127);
  EXPECT_EQ(q[4], 50);
  EXPECT_EQ(q[5], -127);
  EXPECT_EQ(q[6], 0);
  EXPECT_EQ(q[7], 25);
}

// Row lengths below, at and off a multiple of the vector width (the tail is
// scalar), scores spread wide enough that exp underflows for some; only the
// given head's rows change, and the kept maximum and sum are the row's.
TEST(attention_softmax, matches_a_double_precision_softmax_and_keeps_its_state) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 6.0f);
  for (int n : {3, 8, 13, 197})
    for (int m : {1, 4}) {
      const int h = 3;
      attention_frame f;
      f.m = m;
      f.score_offset = 5;  // the frame's scores start inside a shared buffer
      std::vector<float> scores(static_cast<std::size_t>(5 + h * m * n));
      for (auto& x : scores) x = d(rng);
      const auto before = scores;
      std::vector<float> row_max(static_cast<std::size_t>(m)), row_sum(static_cast<std::size_t>(m));
      const int head = 1;
      attention_softmax(f, attention_shape{n, h, 8}, head, scores.data(), row_max.data(), row_sum.data());
      for (std::size_t j = 0; j < scores.size(); ++j) {
        const auto row_of = (static_cast<long>(j) - 5) / n;
        if (j < 5 || row_of / m != head) {
          ASSERT_EQ(scores[j], before[j]) << "n=" << n << " other row, score " << j;
        }
      }
      for (int i = 0; i < m; ++i) {
        const float* in = before.data() + 5 + (head * m + i) * n;
        const float* out = scores.data() + 5 + (head * m + i) * n;
        double mx = in[0], z = 0;
        for (int t = 1; t < n; ++t) mx = std::max(mx, double(in[t]));
        for (int t = 0; t < n; ++t) z += std::exp(in[t] - mx);
        EXPECT_EQ(row_max[static_cast<std::size_t>(i)], static_cast<float>(mx));
        EXPECT_NEAR(row_sum[static_cast<std::size_t>(i)], z, 1e-5 * z) << "n=" << n << " query " << i;
        for (int t = 0; t < n; ++t)
          ASSERT_NEAR(out[t], std::exp(in[t] - mx) / z, 1e-6) << "n=" << n << " query " << i << " key " << t;
      }
    }
}

// Each (frame, head) item writes its own head's new keys: one head's call
// changes exactly that head's rows of the transposed store, at the given
// tokens, and the heads' calls together equal the all-heads write (f32 and
// half-precision stores).
TEST(store_keys, one_head_writes_only_its_rows_and_all_heads_equal_the_whole_write) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d;
  const int n = 45, h = 3, dh = 16, w = h * dh;
  const std::vector<std::int64_t> tokens{0, 3, 4, 17, 44};
  const int count = static_cast<int>(tokens.size());
  std::vector<float> keys(static_cast<std::size_t>(count) * w);
  for (auto& x : keys) x = d(rng);
  const attention_shape shape{n, h, dh};

  std::vector<float> base(static_cast<std::size_t>(w) * n);
  for (auto& x : base) x = d(rng);
  auto one = base, whole = base, per_head = base;
  attention_frame f;
  f.k_t = one.data();
  store_keys(f, shape, keys.data(), tokens.data(), count, 1);
  for (int c = 0; c < w; ++c)
    for (int t = 0; t < n; ++t) {
      const auto at = static_cast<std::size_t>(c) * n + t;
      const int j = static_cast<int>(std::find(tokens.begin(), tokens.end(), t) - tokens.begin());
      if (c / dh == 1 && j < count) ASSERT_EQ(one[at], keys[static_cast<std::size_t>(j) * w + c]) << "row " << c << " token " << t;
      else ASSERT_EQ(one[at], base[at]) << "row " << c << " token " << t << " is not head 1's or not a new token's";
    }
  f.k_t = whole.data();
  store_keys(f, shape, keys.data(), tokens.data(), count);
  f.k_t = per_head.data();
  for (int head = 0; head < h; ++head) store_keys(f, shape, keys.data(), tokens.data(), count, head);
  EXPECT_EQ(per_head, whole);

  std::vector<std::uint16_t> half_whole(static_cast<std::size_t>(w) * n, 0), half_heads = half_whole;
  attention_frame g;
  g.k_t16 = half_whole.data();
  store_keys(g, shape, keys.data(), tokens.data(), count);
  g.k_t16 = half_heads.data();
  for (int head = h - 1; head >= 0; --head) store_keys(g, shape, keys.data(), tokens.data(), count, head);
  EXPECT_EQ(half_heads, half_whole);
  std::vector<float> back(half_whole.size());
  from_half(half_whole.data(), back.data(), static_cast<std::int64_t>(back.size()));
  EXPECT_NEAR(back[static_cast<std::size_t>(2 * dh + 5) * n + 17], keys[3 * w + 2 * dh + 5], 2e-3);
}

}  // namespace
}  // namespace vlcache
