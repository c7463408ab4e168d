#pragma once
/// \file
/// One frame's cache step: decide (reference gate) -> plan (drift control
/// and budget) -> encode (sparse ViT) -> commit, or reset on failure. The
/// benchmarks and the examples run this class; the pipeline runs the same
/// step split over its actors (shards decide and commit, the source plans,
/// the encoder encodes), and a test requires identical tokens from both.
///
/// What moves when (docs/design/cache-decision.md, "The cache step"):
/// - a position's reference becomes the frame's signature exactly when its
///   token is computed: the plan's positions (gate misses, tokens the drift
///   policy added, every position on a full refresh);
/// - a miss the per-frame budget deferred keeps its old reference: the
///   stored token was computed from that one, so the position misses again
///   until it is computed, or hits again if the patch returns to it;
/// - when encoding fails, the stream's references and drift state are
///   dropped (the encoder drops its store too): its next frame runs in full.

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/cache/drift_policy.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/cache/view_memory.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache {

/// One stream's frame entering the step.
struct step_frame {
  stream_id stream = 0;
  std::uint64_t seq = 0;
  const frame_signatures* signatures = nullptr;
  const float* pixels = nullptr;  ///< CHW, normalised, as the encoder takes it
  double layer_tolerance = 0.0;   ///< layer-wise recompute: this frame's tolerance (0: the encoder's)
};

/// The step's verdict on a frame before encoding.
struct step_plan {
  gate_decision decision;
  compute_plan plan;
  /// With view memory (core/cache/view_memory): the frame leaves the stream's
  /// view, for `restore` when it found a kept one (else a new view).
  bool cut = false;
  std::optional<stream_id> restore;
};

class cache_step {
 public:
  [[nodiscard]] static expected<cache_step> make(const patch_grid& grid, const gate_thresholds& gate,
                                                 const drift_config& drift, const view_memory_config& views = {});

  /// Decides and plans each frame (at most one per stream); moves no
  /// reference, no drift state and no view.
  [[nodiscard]] expected<std::vector<step_plan>> plan(const std::vector<step_frame>& frames);

  /// Applies the plans' view actions, encodes the planned frames as one
  /// batch, then commits each of them; on failure resets every stream of
  /// the batch and returns the error.
  [[nodiscard]] expected<std::vector<frame_result>> encode(vision_encoder& encoder,
                                                           const std::vector<step_frame>& frames,
                                                           const std::vector<step_plan>& plans);

  /// plan() then encode().
  [[nodiscard]] expected<std::vector<frame_result>> run(vision_encoder& encoder,
                                                        const std::vector<step_frame>& frames,
                                                        std::vector<step_plan>* plans = nullptr);

  /// The frame's planned tokens were computed: their references and the
  /// stream's drift state move.
  [[nodiscard]] status commit(const step_frame& frame, const compute_plan& plan);
  /// The stream's tokens can no longer be trusted: its next frame is full.
  void reset(stream_id stream);
  /// Forgets the stream and its views (their token stores in `encoder` too).
  void end_stream(stream_id stream, vision_encoder& encoder);

  [[nodiscard]] const reference_gate& gate() const noexcept { return gate_; }
  [[nodiscard]] const drift_controller& drift() const noexcept { return drift_; }
  /// The stream's view memory (null when off or before its first frame).
  [[nodiscard]] const view_memory* views(stream_id stream) const;

 private:
  cache_step(reference_gate gate, drift_controller drift, const view_memory_config& views)
      : gate_(std::move(gate)), drift_(std::move(drift)), view_config_(views) {}
  /// Gates a cut frame against the stream's kept views; fills the plan's action.
  [[nodiscard]] status plan_view(const step_frame& frame, step_plan& plan);

  reference_gate gate_;
  drift_controller drift_;
  view_memory_config view_config_;
  std::map<stream_id, view_memory> views_;
};

}  // namespace vlcache
