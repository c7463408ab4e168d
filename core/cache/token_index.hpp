#pragma once
/// \file
/// A content-addressed index of computed visual tokens: signature -> entries
/// (stream, position, frame, hit count, last use, the token itself). It serves
/// reuse across positions, frames and streams (moved content, revisited
/// views, identical cameras). A token depends on its position and context,
/// so reuse at another position is approximate: callers report its error.
///
/// Capacity is in bytes and is never exceeded: an insert evicts by the
/// configured policy until the new entry fits. Time is a logical clock the
/// caller passes in (frame count, ticks); core/ reads no clock.

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/eviction_policy.hpp"
#include "core/cache/patch_grid.hpp"

namespace vlcache {

struct token_index_config {
  std::uint64_t capacity_bytes = 64ull << 20;
  eviction_policy policy = eviction_policy::lru;
  double half_life = 100.0;  ///< decayed_frequency: ticks for a use to count half

  [[nodiscard]] status validate() const;
};

struct index_entry {
  std::uint64_t id = 0;
  std::uint64_t key = 0;  ///< the signature the entry is addressed by
  stream_id stream = 0;
  int position = 0;
  std::uint64_t frame = 0;
  std::uint64_t hits = 0;
  std::uint64_t last_use = 0;
  std::vector<float> token;
};

class token_index {
 public:
  /// Bytes an entry with a token of `dim` floats is charged: the token, the
  /// entry and a fixed allowance for its nodes in the lookup maps.
  [[nodiscard]] static std::uint64_t entry_bytes(std::size_t dim) noexcept;

  [[nodiscard]] static expected<token_index> make(const token_index_config& config);

  /// Adds a token, or replaces the entry of the same (key, stream, position).
  /// Evicts until it fits; an entry larger than the capacity is an error.
  [[nodiscard]] expected<std::uint64_t> insert(std::uint64_t key, stream_id stream, int position,
                                               std::uint64_t frame, std::vector<float> token,
                                               std::uint64_t now);

  /// Exact-key lookup for `stream` (counted in its stats). Prefers the entry
  /// of the same stream and position, then the most recently used.
  [[nodiscard]] const index_entry* find(std::uint64_t key, stream_id stream, int position,
                                        std::uint64_t now);

  /// Lookup around `position` for content that moved: entries of `stream`
  /// within `radius` patches (Chebyshev distance) whose key is within
  /// `max_hamming` bits; the closest key wins, then the nearest position.
  [[nodiscard]] const index_entry* find_near(std::uint64_t key, stream_id stream, int position,
                                             const patch_grid& grid, int radius, int max_hamming,
                                             std::uint64_t now);

  /// Drops every entry of the stream and its counters.
  void end_stream(stream_id stream);

  [[nodiscard]] cache_stats stats(stream_id stream) const;
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] const token_index_config& config() const noexcept { return config_; }
  /// Entry ids in eviction order (the first is evicted next); for inspection.
  [[nodiscard]] std::vector<std::uint64_t> eviction_order() const;

 private:
  using priority = std::tuple<double, double, std::uint64_t>;  // smaller is evicted first
  struct slot {
    index_entry entry;
    double log_score = 0.0;  // decayed_frequency: log2(score) + last_use / half_life
    priority prio;
  };
  explicit token_index(const token_index_config& c) : config_(c) {}
  [[nodiscard]] priority priority_of(const slot& s) const;
  void touch(slot& s, std::uint64_t now, bool hit);
  void erase(std::uint64_t id, bool evicted);
  const index_entry* hit(std::uint64_t id, stream_id stream, std::uint64_t now);
  void miss(stream_id stream);

  token_index_config config_;
  std::uint64_t next_id_ = 1;
  std::uint64_t bytes_ = 0;
  std::unordered_map<std::uint64_t, slot> entries_;
  std::unordered_multimap<std::uint64_t, std::uint64_t> by_key_;
  std::map<std::pair<stream_id, int>, std::vector<std::uint64_t>> by_position_;
  std::set<std::pair<priority, std::uint64_t>> queue_;
  std::unordered_map<stream_id, cache_stats> stats_;
};

}  // namespace vlcache
