#pragma once
/// \file
/// One byte budget for the token stores of all streams (docs/design/cache-decision.md, "One byte budget"; "Many
/// streams in bounded memory"). The encoder asks it for room before a
/// stream's state is allocated; when the states would not fit, the budget
/// names whole stream states to give up, by the configured policy, never one
/// of the streams being encoded. A stream that lost its state runs its next
/// frame in full. Time is the budget's own count of encoded frames; core/
/// reads no clock.

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/cache_stats.hpp"
#include "core/error.hpp"
#include "core/eviction_policy.hpp"

namespace vlcache {

struct store_budget_config {
  std::uint64_t capacity_bytes = 0;  ///< 0 = unbounded
  eviction_policy policy = eviction_policy::lru;
  double half_life = 100.0;  ///< decayed_frequency: encoded frames for a use to count half

  [[nodiscard]] status validate() const;
};

class store_budget {
 public:
  explicit store_budget(const store_budget_config& config) : config_(config) {}

  /// The streams to evict, first to last, so that `needed` more bytes fit;
  /// none of `keep`. An error when even evicting every other stream leaves
  /// too little room (names the capacity and what is asked).
  [[nodiscard]] expected<std::vector<stream_id>> make_room(std::uint64_t needed,
                                                           const std::set<stream_id>& keep) const;
  /// The stream's state now takes `bytes` (0 drops it).
  void charge(stream_id stream, std::uint64_t bytes);
  /// One frame of the stream was encoded.
  void use(stream_id stream);
  void release(stream_id stream) { streams_.erase(stream); }
  /// The state charged to `from` is now `to`'s, with its use history.
  void rename(stream_id from, stream_id to);

  [[nodiscard]] std::uint64_t used() const noexcept;
  [[nodiscard]] bool bounded() const noexcept { return config_.capacity_bytes > 0; }
  [[nodiscard]] const store_budget_config& config() const noexcept { return config_; }

 private:
  struct entry {
    std::uint64_t bytes = 0, uses = 0, last_use = 0;
    double log_score = 0;  // decayed_frequency: log2(score) + last_use / half_life
  };
  /// Smaller is evicted first.
  [[nodiscard]] std::pair<double, double> priority(const entry& e) const;

  store_budget_config config_;
  std::uint64_t now_ = 0;
  std::map<stream_id, entry> streams_;
};

}  // namespace vlcache
