#pragma once
/// \file
/// Messages that travel between the actors of one process. Every message
/// carries the frame's tag; pixels, signatures, decisions and tokens travel
/// as shared handles to immutable data, never as copies.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "core/cache/cache_stats.hpp"
#include "core/cache/drift_policy.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/scenes/scene.hpp"
#include "core/models/tensor_handle.hpp"
#include "core/cache/view_memory.hpp"

namespace vlcache::actors {

using steady = std::chrono::steady_clock;

/// How a frame left the pipeline, reported back to its source. `lost`: the
/// encoder failed and the stream's tokens are gone (the source resets the
/// stream); `failed`: a later stage (a sink) failed, the cache is intact.
enum class frame_outcome : std::uint8_t { encoded, failed, lost };

using tick_atom = caf::atom_constant<caf::atom("tick")>;
using decide_atom = caf::atom_constant<caf::atom("decide")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using eos_atom = caf::atom_constant<caf::atom("eos")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using end_stream_atom = caf::atom_constant<caf::atom("endstream")>;
/// To a source: a shadow check found the stream's tokens drifted; its next
/// frame recomputes every token.
using refresh_atom = caf::atom_constant<caf::atom("refresh")>;

/// What the later stages tell a frame's source: the frame left the
/// pipeline (its credit comes back), or the stream's tokens drifted.
using credit_actor = caf::typed_actor<caf::reacts_to<done_atom, std::uint64_t, frame_outcome>,
                                      caf::reacts_to<refresh_atom, std::uint64_t>>;

/// Identifies a frame: its stream, its sequence number in that stream and
/// the capture time (milliseconds on the source's clock).
struct frame_tag {
  stream_id stream = 0;
  std::string stream_name;
  std::uint64_t seq = 0;
  double capture_ms = 0.0;
};

/// A preprocessed frame to hash.
struct hash_request {
  frame_tag tag;
  std::shared_ptr<const preprocessed_image> image;
};

/// The signatures of one frame.
struct hashed_frame {
  frame_tag tag;
  std::shared_ptr<const frame_signatures> signatures;
};

/// One frame on its way from its source to the sinks; each stage fills in
/// its part and its time.
struct frame_job {
  frame_tag tag;
  credit_actor source;  ///< gets the frame's credit back when it leaves the pipeline
  std::shared_ptr<const preprocessed_image> image;
  std::shared_ptr<const frame_signatures> signatures;
  std::shared_ptr<const gate_decision> decision;  ///< merged over all shards
  std::shared_ptr<const compute_plan> plan;       ///< what the encoder computes (core/models/cache_step)
  std::shared_ptr<const scene_question> asked;    ///< a question with a known answer (scene cameras), or none
  steady::time_point read_at, hashed_at, gated_at;
};

/// A shard's hit/miss verdict for its band of positions.
struct shard_decision {
  std::shared_ptr<const gate_decision> decision;
};

/// The stream leaves its view (core/cache/view_memory): the shards and the encoder
/// rename its state, before any later message about the stream.
struct view_change {
  stream_id stream = 0;
  view_action action;
};

/// Positions whose tokens the frame's plan computes: the shards record the
/// frame's signatures as their references (core/models/cache_step's rule).
struct commit_positions {
  stream_id stream = 0;
  std::uint64_t seq = 0;
  std::shared_ptr<const frame_signatures> signatures;
  std::shared_ptr<const std::vector<int>> positions;
};

/// Positions whose tokens can no longer be trusted (the stream's encode
/// failed): the shards forget their references, so they miss.
struct invalidate_positions {
  stream_id stream = 0;
  std::shared_ptr<const std::vector<int>> positions;
};

/// The encoder's output for one frame: the full token sequence, raster order.
struct encoded_frame {
  frame_job job;
  tensor_handle features;
  std::shared_ptr<const std::vector<int>> positions;  ///< patches recomputed (all of them when full)
  int computed = 0;
  bool full = false;
  steady::time_point encoded_at;
};

}  // namespace vlcache::actors

// In-process only: these hold handles, so they are never serialised.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::hash_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::hashed_frame)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::frame_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::shard_decision)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::view_change)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::commit_positions)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::encoded_frame)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::invalidate_positions)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::frame_outcome)
