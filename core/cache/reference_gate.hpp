#pragma once
/// \file
/// Reference gating per (stream, position): a position is a hit when its
/// signatures are within threshold of the ones recorded when that position's
/// token was last computed, not the previous frame's. A slow ramp therefore
/// accumulates distance until it misses, and the recompute then moves the
/// reference (docs/design/cache-decision.md, reference gating).
///
/// The noise floor of a stream is the median, over its last frames, of each
/// frame's one-frame spatial noise estimate (frame_signatures::noise_sigma):
/// since no frame difference enters, a pan or a crowd cannot pass for noise,
/// and every shard of a frame sees the same figure. Two noisy frames of a static patch then differ by about
/// 1.13 sigma / mad_cell in MAD (the difference of two cell means).
///
/// decide() judges a frame without changing references; commit() records the
/// frame's signatures for the positions whose tokens were actually computed,
/// so a compute budget that skips some misses keeps their old reference.

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/patch_signatures.hpp"

namespace vlcache {

/// A signature takes part in the gate when its threshold is set; a position
/// misses when any taking part exceeds its threshold.
struct gate_thresholds {
  std::optional<int> ahash;  ///< max Hamming distance for a hit, 0..64
  std::optional<int> dhash;
  std::optional<int> phash;
  std::optional<float> mad;  ///< max mean absolute difference for a hit, 0..255
  /// The MAD compares means over cells of this many pixels square (1: raw
  /// pixels): sensor noise shrinks by the cell's side, real changes do not.
  int mad_cell = 1;
  /// When set, the MAD threshold of a stream is at least this many times the
  /// MAD that its sensor noise alone would give (see reference_gate): a
  /// noisy camera's noise stays a hit.
  std::optional<float> noise_factor;

  [[nodiscard]] status validate() const;
  [[nodiscard]] bool any() const noexcept { return ahash || dhash || phash || mad; }
};

struct gate_decision {
  std::vector<std::uint8_t> miss;  ///< 1 where the token must be recomputed
  /// How far past its threshold each position is: the largest distance /
  /// threshold over the signatures in the gate (> 1 is a miss; infinite
  /// without a reference). Budgets recompute the largest first.
  std::vector<float> score;
  std::vector<int> miss_positions; ///< the same, as raster positions
  float noise_floor = 0.0f;    ///< the stream's noise floor when judged (see reference_gate)
  float mad_threshold = 0.0f;  ///< the MAD threshold applied (0 without a MAD gate)
  [[nodiscard]] int misses() const noexcept { return static_cast<int>(miss_positions.size()); }
  [[nodiscard]] double miss_share() const noexcept {
    return miss.empty() ? 0.0 : static_cast<double>(miss_positions.size()) / miss.size();
  }
};

class reference_gate {
 public:
  [[nodiscard]] static expected<reference_gate> make(const patch_grid& grid,
                                                     const gate_thresholds& thresholds);

  /// Hit or miss per position against the stream's references; a position
  /// without a reference misses. Counts hits and misses for the stream.
  /// With a range, only positions [first, last) are judged (a cache shard's
  /// band); the others are reported as hits with score 0.
  [[nodiscard]] expected<gate_decision> decide(stream_id stream, const frame_signatures& sigs,
                                               int first = 0, int last = -1);

  /// Records `sigs` as the reference of `positions` (tokens computed at `frame`).
  [[nodiscard]] status commit(stream_id stream, const frame_signatures& sigs,
                              const std::vector<int>& positions, std::uint64_t frame);

  /// Forgets the references of `positions` (their tokens were not computed
  /// after all): they miss on the stream's next frame.
  [[nodiscard]] status invalidate(stream_id stream, const std::vector<int>& positions);

  /// Frame at which the token of `position` was last computed, if ever.
  [[nodiscard]] std::optional<std::uint64_t> computed_at(stream_id stream, int position) const;

  /// The stream's noise floor (sigma in levels; 0 without noise_factor or
  /// before its first frame) and the MAD threshold it currently implies.
  [[nodiscard]] float noise_floor(stream_id stream) const;
  [[nodiscard]] float effective_mad(stream_id stream) const;

  /// Frees the stream's references and counters.
  void end_stream(stream_id stream);
  /// The references and counters of `from` become those of `to` (whose
  /// own are dropped); `from` then has none. View memory keeps a view's
  /// state this way under an id of its own.
  void rename_stream(stream_id from, stream_id to);

  [[nodiscard]] cache_stats stats(stream_id stream) const;
  [[nodiscard]] std::size_t stream_count() const noexcept { return streams_.size(); }
  [[nodiscard]] const patch_grid& grid() const noexcept { return grid_; }
  [[nodiscard]] const gate_thresholds& thresholds() const noexcept { return thresholds_; }

 private:
  struct stream_state {
    std::vector<std::uint64_t> ahash, dhash, phash;
    std::vector<std::uint8_t> patches;
    std::vector<std::int64_t> computed_at;  // -1: never computed
    std::vector<float> noise_history;        // per-frame estimates, a ring
    std::size_t noise_next = 0;
    float noise_floor = 0.0f;
    cache_stats stats;
  };
  static constexpr std::size_t noise_frames = 9;
  static void update_noise_floor(stream_state& s, float frame_sigma);
  [[nodiscard]] float mad_threshold(const stream_state& s) const;
  reference_gate(const patch_grid& grid, const gate_thresholds& t) : grid_(grid), thresholds_(t) {}
  [[nodiscard]] status check(const frame_signatures& sigs) const;
  stream_state& state(stream_id stream);

  patch_grid grid_;
  gate_thresholds thresholds_;
  std::unordered_map<stream_id, stream_state> streams_;
};

}  // namespace vlcache
