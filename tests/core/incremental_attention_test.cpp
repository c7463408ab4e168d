// Incremental attention against attention computed from scratch: a few keys
// and values change, the reused queries' state is updated, and their output
// must equal softmax(q K'^T) V' over the new keys and values. Head widths and
// change counts cover every vector path (8 and 16 lanes, ragged tails).

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/kernels/incremental_attention.hpp"

namespace vlcache {
namespace {

struct attention_case {
  int tokens, heads, head_dim, changed;
};

class incremental_attention : public ::testing::TestWithParam<attention_case> {};

TEST_P(incremental_attention, equals_attention_over_the_new_keys_and_values) {
  const auto [t, h, dh, n] = GetParam();
  const int w = h * dh, padded = (n + 7) / 8 * 8;
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 0.5f);
  auto fill = [&](std::vector<float>& v, std::size_t size) {
    v.resize(size);
    for (auto& x : v) x = d(rng);
  };
  std::vector<float> q, k, v;  // rows [t, w]
  fill(q, static_cast<std::size_t>(t) * w);
  fill(k, static_cast<std::size_t>(t) * w);
  fill(v, static_cast<std::size_t>(t) * w);
  // The stored state of every query over the old keys and values.
  std::vector<float> num(static_cast<std::size_t>(t) * w), z(static_cast<std::size_t>(t) * h),
      m(static_cast<std::size_t>(t) * h);
  auto attend = [&](int query, int head, const std::vector<float>& keys, const std::vector<float>& values,
                    float* out_num, float* out_z, float* out_m) {
    std::vector<double> s(static_cast<std::size_t>(t));
    double top = -1e300;
    for (int j = 0; j < t; ++j) {
      double acc = 0;
      for (int e = 0; e < dh; ++e) acc += double(q[query * w + head * dh + e]) * keys[j * w + head * dh + e];
      s[j] = acc;
      top = std::max(top, acc);
    }
    double zz = 0;
    std::vector<double> acc(static_cast<std::size_t>(dh), 0.0);
    for (int j = 0; j < t; ++j) {
      const double e = std::exp(s[j] - top);
      zz += e;
      for (int x = 0; x < dh; ++x) acc[x] += e * values[j * w + head * dh + x];
    }
    for (int x = 0; x < dh; ++x) out_num[x] = static_cast<float>(acc[x]);
    *out_z = static_cast<float>(zz);
    *out_m = static_cast<float>(top);
  };
  for (int i = 0; i < t; ++i)
    for (int hh = 0; hh < h; ++hh) attend(i, hh, k, v, &num[i * w + hh * dh], &z[i * h + hh], &m[i * h + hh]);

  // Tokens 1, 4, 7, ... change; the others keep their queries.
  std::vector<int> changed;
  for (int i = 0; i < n; ++i) changed.push_back(1 + 3 * i);
  std::vector<float> k_old_t(static_cast<std::size_t>(h) * dh * padded, 0.0f), k_new_t = k_old_t, v_old, v_new;
  std::vector<float> k2 = k, v2 = v;
  for (int c = 0; c < n; ++c) {
    const int tok = changed[c];
    for (int x = 0; x < w; ++x) {
      v_old.push_back(v[tok * w + x]);
      k2[tok * w + x] = d(rng);
      v2[tok * w + x] = d(rng);
      v_new.push_back(v2[tok * w + x]);
    }
    for (int hh = 0; hh < h; ++hh)
      for (int e = 0; e < dh; ++e) {
        k_old_t[(hh * dh + e) * padded + c] = k[tok * w + hh * dh + e];
        k_new_t[(hh * dh + e) * padded + c] = k2[tok * w + hh * dh + e];
      }
  }
  std::vector<float> k2_t(static_cast<std::size_t>(h) * dh * t);  // the store's keys: [heads, head_dim, tokens]
  for (int j = 0; j < t; ++j)
    for (int hh = 0; hh < h; ++hh)
      for (int e = 0; e < dh; ++e) k2_t[(hh * dh + e) * t + j] = k2[j * w + hh * dh + e];
  std::vector<std::int64_t> queries;
  for (int i = 0; i < t; ++i)
    if (i % 3 != 1 || i > 3 * (n - 1) + 1) queries.push_back(i);
  const auto count = static_cast<std::int64_t>(queries.size());
  const attention_state st{q.data(), k2_t.data(), v2.data(), num.data(), z.data(), m.data()};
  const attention_change ch{k_old_t.data(), v_old.data(), k_new_t.data(), v_new.data(), n};
  std::vector<float> out(static_cast<std::size_t>(count) * w);
  attention_update(st, attention_shape{t, h, dh}, ch, queries.data(), count, 0, count * h, out.data());
  for (std::int64_t i = 0; i < count; ++i)
    for (int hh = 0; hh < h; ++hh) {
      std::vector<float> ref(static_cast<std::size_t>(dh));
      float rz = 0, rm = 0;
      attend(static_cast<int>(queries[i]), hh, k2, v2, ref.data(), &rz, &rm);
      for (int x = 0; x < dh; ++x)
        ASSERT_NEAR(out[i * w + hh * dh + x], ref[x] / rz, 1e-4)
            << "query " << queries[i] << " head " << hh << " dim " << x;
    }
}

INSTANTIATE_TEST_SUITE_P(widths_and_counts, incremental_attention,
                         ::testing::Values(attention_case{37, 2, 64, 3}, attention_case{37, 2, 64, 9},
                                           attention_case{61, 3, 64, 17}, attention_case{41, 2, 32, 12},
                                           attention_case{41, 2, 8, 5}, attention_case{70, 1, 128, 20}),
                         [](const ::testing::TestParamInfo<attention_case>& p) {
                           return "head_dim_" + std::to_string(p.param.head_dim) + "_changed_" +
                                  std::to_string(p.param.changed);
                         });

}  // namespace
}  // namespace vlcache
