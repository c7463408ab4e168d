#pragma once
/// \file
/// Counters a cache component keeps per stream.

#include <cstdint>

namespace vlcache {

using stream_id = std::uint32_t;

struct cache_stats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t bytes = 0;  ///< bytes currently held for the stream

  [[nodiscard]] double hit_rate() const noexcept {
    const auto total = hits + misses;
    return total == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(total);
  }
};

}  // namespace vlcache
