#pragma once
/// \file
/// A cache shard: the reference gate for one band of patch rows, for every
/// stream. Shards split the per-frame gate work and its reference state.
///
/// Accepts:
///   (decide_atom, frame_job)   -> shard_decision for positions [first, last);
///                                 judges only, moves no reference
///   commit_positions           -> the frame's planned positions take its
///                                 signatures as references (sent by the frame's
///                                 source before it asks about the next frame,
///                                 so that frame is judged against them)
///   invalidate_positions       -> forgets references (the stream's encode failed)
///   view_change                -> the stream's references follow its views
///   (end_stream_atom, stream)  -> frees the stream's references

#include <caf/behavior.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/frame_messages.hpp"

namespace vlcache::actors {

struct cache_shard_state {
  std::unique_ptr<reference_gate> gate;
  int first = 0, last = 0;
  static inline const char* name = "cache_shard";
};

/// `gate` must be valid for the pipeline's grid.
caf::behavior cache_shard(caf::stateful_actor<cache_shard_state>* self, patch_grid grid,
                          gate_thresholds thresholds, int first, int last);

}  // namespace vlcache::actors
