// The packed small-row GEMM against a naive double-precision product, over
// row counts that exercise every register tile and ragged column panels.

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/kernels/small_gemm.hpp"

namespace vlcache {
namespace {

TEST(packed_weight, matches_naive_product_for_every_row_count) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  for (int n : {1, 16, 37}) {
    const int k = 19;
    std::vector<float> w(n * k), b(n);
    for (auto& v : w) v = d(rng);
    for (auto& v : b) v = d(rng);
    const packed_weight pw(w.data(), n, k, b.data());
    EXPECT_EQ(pw.panels(), (n + packed_weight::panel_width - 1) / packed_weight::panel_width);
    for (int m = 1; m <= 20; ++m) {
      std::vector<float> x(m * k), y(m * n, -1.0f);
      for (auto& v : x) v = d(rng);
      pw.apply(x.data(), m, y.data(), 0, pw.panels());
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = b[j];
          for (int kk = 0; kk < k; ++kk) ref += double(x[i * k + kk]) * w[j * k + kk];
          ASSERT_NEAR(y[i * n + j], ref, 1e-4) << "m=" << m << " n=" << n << " at " << i << "," << j;
        }
    }
  }
}

TEST(packed_weight, panel_ranges_write_only_their_columns) {
  constexpr int pw_cols = packed_weight::panel_width;
  const int n = 2 * pw_cols + 8, k = 8, m = 7;
  std::vector<float> w(n * k, 1.0f), x(m * k, 1.0f), y(m * n, -7.0f);
  const packed_weight pw(w.data(), n, k, nullptr);
  pw.apply(x.data(), m, y.data(), 1, 2);  // the second panel's columns only
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) EXPECT_EQ(y[i * n + j], (j >= pw_cols && j < 2 * pw_cols) ? 8.0f : -7.0f);
}

TEST(packed_weight, half_panels_stay_within_the_rounding_of_each_weight) {
  if (!packed_weight::half_supported()) GTEST_SKIP() << "no F16C on this build's target";
  std::mt19937 rng(9);
  std::normal_distribution<float> d;
  for (int n : {1, 37, 70}) {
    const int k = 23;
    std::vector<float> w(n * k), b(n);
    for (auto& v : w) v = d(rng);
    for (auto& v : b) v = d(rng);
    const packed_weight half(w.data(), n, k, b.data(), true);
    ASSERT_TRUE(half.half());
    for (int m = 1; m <= 26; ++m) {
      std::vector<float> x(m * k), y(m * n, -1.0f);
      for (auto& v : x) v = d(rng);
      half.apply(x.data(), m, y.data(), 0, half.panels());
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = b[j], bound = 0;
          for (int kk = 0; kk < k; ++kk) {
            ref += double(x[i * k + kk]) * w[j * k + kk];
            bound += std::abs(double(x[i * k + kk]) * w[j * k + kk]);
          }
          // Round to nearest: each weight within 2^-11 of itself (normal range).
          ASSERT_NEAR(y[i * n + j], ref, bound * std::ldexp(1.0, -11) + 1e-4) << "m=" << m << " n=" << n;
          EXPECT_NE(y[i * n + j], -1.0f);
        }
    }
  }
}

}  // namespace
}  // namespace vlcache
