#pragma once
// max |a - b| / max |b|: the relative error the encoder tests bound.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace vlcache::testing_support {

inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return den == 0 ? num : num / den;
}

}  // namespace vlcache::testing_support
