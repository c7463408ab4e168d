#pragma once
/// \file
/// Drift control (docs/design/cache-decision.md, "The cache step"). The stored output of a hit
/// token goes stale as the tokens it attends to change. This turns a gate
/// decision into the set of tokens to recompute, bounded by policies:
///
/// - a full refresh every `refresh_interval` frames;
/// - a maximum token age: a token not computed for `max_token_age` frames
///   is recomputed;
/// - a change budget: a token is recomputed once the share of the frame
///   recomputed since its own last compute exceeds `changed_share_budget`;
/// - a per-frame top-r budget: at most `max_tokens_per_frame` tokens, those
///   furthest past their gate threshold first (stale ones after them).
///
/// Positions left out by the budget keep their old reference in the gate
/// (core/models/cache_step commits only what was computed), so they miss again on
/// the next frame unless the patch went back to that reference.

#include <cstdint>
#include <map>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/reference_gate.hpp"

namespace vlcache {

struct drift_config {
  int refresh_interval = 0;           ///< frames; 0 = never
  int max_token_age = 0;              ///< frames; 0 = unlimited
  double changed_share_budget = 0.0;  ///< 0 < budget; 0 = off
  int max_tokens_per_frame = 0;       ///< 0 = unlimited

  [[nodiscard]] status validate() const;
};

struct compute_plan {
  bool full = false;
  std::vector<int> positions;  ///< sorted; every position when full
  int from_gate = 0;           ///< gate misses in the plan
  int from_age = 0;            ///< added because of age
  int from_drift = 0;          ///< added because of the change budget
  int deferred = 0;            ///< misses left for later by the top-r budget
};

class drift_controller {
 public:
  [[nodiscard]] static expected<drift_controller> make(int positions, const drift_config& config);

  /// Plans the frame of `stream` from its gate decision; changes nothing.
  [[nodiscard]] expected<compute_plan> plan(stream_id stream, const gate_decision& decision) const;
  /// Records that `plan` was computed.
  void commit(stream_id stream, const compute_plan& plan);
  void end_stream(stream_id stream) { streams_.erase(stream); }
  /// The state of `from` becomes that of `to` (see reference_gate::rename_stream).
  void rename_stream(stream_id from, stream_id to);

  [[nodiscard]] const drift_config& config() const noexcept { return config_; }

 private:
  struct stream_state {
    std::uint64_t frame = 0;              // frames committed = index of the next frame
    std::uint64_t last_full = 0;          // index of the last full frame
    std::vector<std::uint64_t> computed;  // index of each position's last compute
    std::vector<double> changed;          // share recomputed since then
  };
  drift_controller(int n, const drift_config& c) : n_(n), config_(c) {}

  int n_;
  drift_config config_;
  std::map<stream_id, stream_state> streams_;
};

}  // namespace vlcache
