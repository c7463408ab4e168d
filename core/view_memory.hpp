#pragma once
/// \file
/// View memory (README: "View memory"): one stream's kept views. When a
/// frame misses at least `cut_share` of its positions against references
/// the stream holds (the view changed wholesale: a scene cut, a PTZ camera
/// between presets), the state the stream leaves (gate references, drift
/// state, token store) is kept as a snapshot of that view under an id of
/// its own. The same frame is gated against each kept view: the one it hits
/// best, on at least `match_share` of its positions, is restored and the
/// frame is gated against it; otherwise the frame runs in full. Holders of
/// per-stream state (the gate, the drift controller, the encoder) apply
/// the action by renaming streams, so the encoder's store budget charges
/// and evicts kept views like streams. At most `max_views` a stream, the
/// least recently left let go first.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/cache_stats.hpp"
#include "core/error.hpp"
#include "core/reference_gate.hpp"

namespace vlcache {

struct view_memory_config {
  int max_views = 0;  ///< 0 = off
  double cut_share = 0.5;
  double match_share = 0.5;
  /// View ids: first_view_id | stream << 8 | slot; streams stay below 2^23.
  static constexpr stream_id first_view_id = 0x80000000u;
  static constexpr stream_id max_stream = (1u << 23) - 1;

  [[nodiscard]] status validate() const;
  [[nodiscard]] bool enabled() const noexcept { return max_views > 0; }
};

/// What a frame does to its stream's views before it is judged and encoded.
struct view_action {
  std::optional<stream_id> save_as;  ///< the state the stream leaves is kept under this id
  std::optional<stream_id> restore;  ///< then this kept view becomes the stream's state
  std::vector<stream_id> drop;       ///< kept views let go (beyond max_views)
  [[nodiscard]] bool any() const noexcept { return save_as || restore || !drop.empty(); }
};

/// Applies an action to one holder of per-stream state (anything with
/// rename_stream(from, to) and end_stream(id)).
template <class Holder>
void apply_view_action(Holder& holder, stream_id stream, const view_action& a) {
  if (a.save_as) holder.rename_stream(stream, *a.save_as);
  if (a.restore) holder.rename_stream(*a.restore, stream);
  for (stream_id v : a.drop) holder.end_stream(v);
}

class view_memory {
 public:
  [[nodiscard]] static expected<view_memory> make(stream_id stream, const view_memory_config& config);

  /// The frame left the stream's view: it holds references and misses at
  /// least cut_share of the positions.
  [[nodiscard]] bool is_cut(const gate_decision& decision, bool holds_state) const;
  /// Of the frame's decisions against kept() (one each, same order), the
  /// one it hits best if it hits at least match_share.
  [[nodiscard]] std::optional<std::size_t> best(const std::vector<const gate_decision*>& decisions) const;
  /// Leaves the current view (kept under a new id) for `restore` (one of
  /// kept(), or none: a new view); records it and returns the action.
  [[nodiscard]] view_action leave(std::optional<stream_id> restore);
  /// Lets every view go (the stream ended); the ids to end.
  [[nodiscard]] std::vector<stream_id> clear();

  [[nodiscard]] const std::vector<stream_id>& kept() const noexcept { return kept_; }  ///< least recently left first
  [[nodiscard]] std::uint64_t cuts() const noexcept { return cuts_; }
  [[nodiscard]] std::uint64_t restored() const noexcept { return restored_; }
  [[nodiscard]] const view_memory_config& config() const noexcept { return config_; }

 private:
  view_memory(stream_id stream, const view_memory_config& c) : stream_(stream), config_(c) {}
  stream_id stream_;
  view_memory_config config_;
  std::vector<stream_id> kept_;
  std::uint64_t cuts_ = 0, restored_ = 0;
};

}  // namespace vlcache
