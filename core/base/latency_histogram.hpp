#pragma once
/// \file
/// A latency record of bounded size for a pipeline that runs for months:
/// cumulative counts in fixed buckets (monotonic, as Prometheus histograms
/// need), count and sum over all time, and the most recent samples in a
/// ring for quantiles. Memory does not grow with the number of samples.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/statistics.hpp"

namespace vlcache {

class latency_histogram {
 public:
  /// Upper bounds of the buckets, milliseconds (the +Inf bucket is count()).
  static constexpr std::array<double, 13> bounds_ms{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  static constexpr std::size_t recent_capacity = 4096;

  void add(double ms) {
    for (std::size_t i = 0; i < bounds_ms.size(); ++i)
      if (ms <= bounds_ms[i]) ++buckets_[i];
    ++count_;
    sum_ += ms;
    if (recent_.size() < recent_capacity) recent_.push_back(ms);
    else recent_[next_] = ms;
    next_ = (next_ + 1) % recent_capacity;
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] double sum() const noexcept { return sum_; }
  /// Samples at or below bounds_ms[i], over all time.
  [[nodiscard]] std::uint64_t bucket(std::size_t i) const noexcept { return buckets_[i]; }
  /// Quantile of the most recent samples (up to recent_capacity).
  [[nodiscard]] double recent_quantile(double q) const { return quantile(recent_, q); }
  [[nodiscard]] const std::vector<double>& recent() const noexcept { return recent_; }

 private:
  std::array<std::uint64_t, bounds_ms.size()> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
  std::vector<double> recent_;
  std::size_t next_ = 0;
};

}  // namespace vlcache
