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

#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>

#include "actors/frame_messages.hpp"

namespace vlcache::actors {

using cache_shard_actor = caf::typed_actor<caf::replies_to<decide_atom, frame_job>::with<shard_decision>,
                                           caf::reacts_to<commit_positions>, caf::reacts_to<invalidate_positions>,
                                           caf::reacts_to<view_change>, caf::reacts_to<end_stream_atom, stream_id>>;

struct cache_shard_state {
  std::unique_ptr<reference_gate> gate;
  int first = 0, last = 0;
  static inline const char* name = "cache_shard";
};

/// Judges positions [first, last) of every stream with `gate`.
cache_shard_actor::behavior_type cache_shard(cache_shard_actor::stateful_pointer<cache_shard_state> self,
                                             reference_gate gate, int first, int last);

}  // namespace vlcache::actors
