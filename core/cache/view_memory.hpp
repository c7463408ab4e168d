#pragma once
/// \file
/// View memory (docs/design/view-memory.md): one stream's kept views. A view is
/// known by a frame-level key: the mean level of each patch, compared after
/// taking out the frames' overall brightness difference (the median over
/// patches), so lighting drift and a few moving objects do not hide it. A
/// frame cuts when it misses at least `cut_share` of its positions in the
/// gate and matches the previous frame's key on less than `match_share` of
/// its patches (the view changed wholesale: a scene cut, a PTZ camera
/// between presets; not a crowd crossing the same view). The state the
/// stream leaves (gate references, drift state, token store) is then kept
/// under an id of its own, with the key of the view's last frame; the kept
/// view whose key the frame matches best (on at least `match_share`) is
/// restored and the frame is gated against its references, else the frame
/// runs in full. Holders of per-stream state (the gate, the drift
/// controller, the encoder) apply the action by renaming streams, so the
/// encoder's store budget charges and evicts kept views like streams. At
/// most `max_views` a stream, the least recently left let go first.

#include <cstdint>
#include <optional>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/cache/reference_gate.hpp"

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

/// A frame's view key: the mean level (0..255, over RGB) of each patch.
using view_key = std::vector<float>;
[[nodiscard]] view_key view_key_of(const frame_signatures& sigs);
/// The share of patches on which two keys agree within `key_tolerance`
/// levels once the median difference (overall brightness) is taken out;
/// 0 when the grids differ.
[[nodiscard]] double view_key_match(const view_key& a, const view_key& b);
inline constexpr float key_tolerance = 8.0f;

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

  /// The frame (its gate decision and key) left the stream's view: it was
  /// judged against references (a position without one scores infinite),
  /// misses at least cut_share of its positions, and does not look like
  /// the previous frame.
  [[nodiscard]] bool is_cut(const gate_decision& decision, const view_key& frame) const;
  /// The kept view whose key the frame matches best, if on at least match_share.
  [[nodiscard]] std::optional<stream_id> match(const view_key& frame) const;
  /// The stream's latest frame (its key becomes that of the view it is in).
  void seen(view_key frame) { last_ = std::move(frame); }
  /// Leaves the current view (kept under a new id with the key last seen)
  /// for `restore` (a kept view, or none: a new view); returns the action.
  [[nodiscard]] view_action leave(std::optional<stream_id> restore);
  /// Lets every view go (the stream ended); the ids to end.
  [[nodiscard]] std::vector<stream_id> clear();

  [[nodiscard]] std::vector<stream_id> kept() const;  ///< least recently left first
  [[nodiscard]] std::uint64_t cuts() const noexcept { return cuts_; }
  [[nodiscard]] std::uint64_t restored() const noexcept { return restored_; }
  [[nodiscard]] const view_memory_config& config() const noexcept { return config_; }

 private:
  view_memory(stream_id stream, const view_memory_config& c) : stream_(stream), config_(c) {}
  struct kept_view {
    stream_id id;
    view_key key;
  };
  stream_id stream_;
  view_memory_config config_;
  std::vector<kept_view> kept_;
  view_key last_;
  std::uint64_t cuts_ = 0, restored_ = 0;
};

}  // namespace vlcache
