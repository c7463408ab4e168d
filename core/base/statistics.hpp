#pragma once
/// \file
/// Summary statistics for reports: nearest-rank quantile, sum and mean.

#include <algorithm>
#include <vector>

namespace vlcache {

/// Nearest-rank quantile (q in [0, 1]) of `v`; 0 for an empty sample.
[[nodiscard]] inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

[[nodiscard]] inline double sum(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s;
}

[[nodiscard]] inline double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : sum(v) / static_cast<double>(v.size());
}

}  // namespace vlcache
