#pragma once
/// \file
/// A camera's frame planner: the planning half of the cache step
/// (core/models/cache_step) for one stream. Frames come from the camera's source;
/// each is hashed by a hasher of the pool (in parallel), then judged by
/// every cache shard one frame at a time, in order (each plan moves the
/// references the next frame is judged against), planned by drift control,
/// and sent to the encoder in the order it came. With view memory, a frame
/// that left the camera's view is judged again against the kept view it
/// matches (core/cache/view_memory), the shards, the drift state and the encoder
/// following it. A frame that cannot be planned goes back to its source as
/// failed.
///
/// Accepts:
///   frame_job                  -> planned and sent on to the encoder
///   (refresh_atom, seq)        -> the stream's tokens are gone or drifted
///                                 (the encoder lost frame seq, or a shadow
///                                 check): references and drift state drop,
///                                 the next planned frame runs in full
///   stats_atom                 -> replies planner_counters
///   stop_atom                  -> the camera ended: its kept views go;
///                                 replies planner_counters

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <map>
#include <memory>
#include <optional>

#include "actors/cache_shard_actor.hpp"
#include "actors/encoder_actor.hpp"
#include "actors/frame_messages.hpp"
#include "actors/hasher_actor.hpp"
#include "core/cache/drift_policy.hpp"
#include "core/cache/view_memory.hpp"

namespace vlcache::actors {

struct planner_settings {
  std::string name;  ///< the camera's, for messages
  stream_id stream = 0;
  drift_config drift;
  view_memory_config views;  ///< view memory (off unless max_views > 0)
};

struct planner_counters {
  /// The gate at the latest frame: the camera's noise floor (sigma, levels;
  /// 0 unless [gate].noise_factor) and the MAD threshold it led to.
  double noise_floor = 0, mad_threshold = 0;
  /// View memory: frames that left the camera's view, and of them those
  /// that went back to a kept view instead of running in full.
  std::uint64_t view_cuts = 0, views_restored = 0;
};

struct planner_state {
  planner_settings settings;
  std::vector<hasher_actor> hashers;
  std::vector<cache_shard_actor> shards;
  encoder_actor encoder;
  // Hashers and shards run in parallel, so frames can come back out of
  // order: they wait here until every earlier frame went on.
  std::map<std::uint64_t, std::optional<frame_job>> reorder;  // arrival index -> job (empty: failed)
  std::uint64_t dispatched = 0, released = 0;
  std::map<std::uint64_t, std::shared_ptr<frame_job>> hashed;  // waiting to be gated in order (null: failed)
  std::uint64_t next_gate = 0;
  std::size_t next_hasher = 0;
  int grid_positions = 0;                    // patches per frame, known from the first hashed frame
  bool gating = false;                       // a frame is with the shards now
  std::unique_ptr<drift_controller> drift;   // made on the first frame (grid size)
  std::optional<view_memory> views;          // with view memory
  std::uint64_t planned_seq = 0;             // seq of the latest planned frame + 1
  std::optional<std::uint64_t> reset_until;  // failures of frames planned before this seq are covered
  planner_counters counters;
  static inline const char* name = "frame_planner";
};

using planner_actor =
    caf::typed_actor<caf::reacts_to<frame_job>, caf::reacts_to<refresh_atom, std::uint64_t>,
                     caf::replies_to<stats_atom>::with<planner_counters>,
                     caf::replies_to<stop_atom>::with<planner_counters>>;

planner_actor::behavior_type frame_planner(planner_actor::stateful_pointer<planner_state> self,
                                           planner_settings settings, std::vector<hasher_actor> hashers,
                                           std::vector<cache_shard_actor> shards, encoder_actor encoder);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::planner_counters)
