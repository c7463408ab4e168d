#pragma once
/// \file
/// One byte budget for the token stores of all streams (docs/design/cache-decision.md, "One byte budget"; "Many
/// streams in bounded memory"). The encoder asks it for room before a
/// stream's state is allocated. With the default policy, `value`, which
/// streams keep a state is decided by what a state saves: each stream's
/// saving per frame (the share of its tokens the gate would reuse), summed
/// over its frames with a half-life, per byte. A stream without a state
/// gets one only by displacing states worth clearly less (`hysteresis`);
/// otherwise it runs its frames in full and stores nothing, so a set of
/// states that all save alike stays resident instead of thrashing. The
/// recency and count policies (lru, lfu, decayed_frequency) always make
/// room, giving up whole states by their order. Never one of the streams
/// being encoded. Time is the budget's own count of encoded frames; core/
/// reads no clock.

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/eviction_policy.hpp"

namespace vlcache {

struct store_budget_config {
  std::uint64_t capacity_bytes = 0;  ///< 0 = unbounded
  eviction_policy policy = eviction_policy::value;
  /// decayed_frequency and value: encoded frames (of all streams) for a use,
  /// or a frame's saving, to count half (value: at least sixteen times the
  /// number of streams, see value_half_life()).
  double half_life = 100.0;
  /// value: a stream without a state displaces states only when its value
  /// is this many times theirs.
  double hysteresis = 1.5;

  [[nodiscard]] status validate() const;
};

/// Room for a batch's streams that have no state.
struct room_plan {
  std::vector<stream_id> victims;  ///< states to give up, first to last
  std::set<stream_id> denied;      ///< streams that get no state: they run in full and store nothing
};

class store_budget {
 public:
  explicit store_budget(const store_budget_config& config) : config_(config) {}

  /// The streams to evict, first to last, so that `needed` more bytes fit;
  /// none of `keep`; by recency or counts (value ranks by value here). An
  /// error when even evicting every other stream leaves too little room
  /// (names the capacity and what is asked).
  [[nodiscard]] expected<std::vector<stream_id>> make_room(std::uint64_t needed,
                                                           const std::set<stream_id>& keep) const;
  /// Room for `newcomers` (streams without a state, `bytes_each` apiece),
  /// none of `keep` given up. The value policy may deny some; the others
  /// are make_room() for all of them.
  [[nodiscard]] expected<room_plan> plan_room(const std::vector<stream_id>& newcomers, std::uint64_t bytes_each,
                                              const std::set<stream_id>& keep) const;
  /// The stream's state now takes `bytes` (0: it has none; its history stays).
  void charge(stream_id stream, std::uint64_t bytes);
  /// One frame of the stream was encoded; a state would have saved
  /// `saved_share` of its tokens (whether it had one or not).
  void use(stream_id stream, double saved_share = 1.0);
  /// The stream ended: state and history go.
  void release(stream_id stream) { streams_.erase(stream); }
  /// The state charged to `from` is now `to`'s, with its use history.
  void rename(stream_id from, stream_id to);

  /// What a state of the stream saves: its frames' saved shares summed
  /// with the half-life, as of now (a value per byte once divided by the state's size).
  [[nodiscard]] double saving(stream_id stream) const;
  [[nodiscard]] std::uint64_t used() const noexcept;
  [[nodiscard]] bool bounded() const noexcept { return config_.capacity_bytes > 0; }
  [[nodiscard]] bool holds(stream_id stream) const;
  [[nodiscard]] const store_budget_config& config() const noexcept { return config_; }

 private:
  struct entry {
    std::uint64_t bytes = 0, uses = 0, last_use = 0;
    double log_score = 0;  // decayed_frequency: log2(score) + last_use / half_life
    double saved = 0;      // value: the decayed sum of savings, as of last_use
  };
  /// Smaller is evicted first.
  [[nodiscard]] std::pair<double, double> priority(const entry& e) const;
  [[nodiscard]] double saving_of(const entry& e) const;
  /// value: the savings' half-life, at least sixteen rounds of every stream.
  /// Under round-robin a stream is encoded once every N frames (N streams);
  /// a shorter half-life ranks states by how recently their stream came
  /// (the round-robin's phase) instead of by what they save, and the
  /// resident set follows the phase: 765 evictions for 256 cameras at
  /// 512 MiB with 100 frames; four rounds still left the Poisson noise of
  /// dropped frames above the hysteresis (docs/benchmarks.md, "Many cameras").
  [[nodiscard]] double value_half_life() const;

  store_budget_config config_;
  std::uint64_t now_ = 0;
  std::map<stream_id, entry> streams_;  // every stream seen; those with bytes hold a state
};

}  // namespace vlcache
