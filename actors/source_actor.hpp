#pragma once
/// \file
/// A camera source: decodes frames (OpenCV, through connectors/), runs CLIP
/// preprocessing, and hands each frame to the camera's planner
/// (actors/frame_planner_actor: hashing, gate, plan; then the encoder)
/// through its flow limiter (core/base/flow_limiter: at most `max_in_flight`
/// frames between decode and the sinks, then the drop policy). Every frame
/// read ends counted as encoded, dropped (by reason) or failed. A frame the encoder lost, or a shadow check's refresh, is
/// passed to the planner (the stream's next planned frame runs in full).

/// With an empty video source it runs in push mode: frames come as
/// pushed_frame messages (from the network ingest) instead of a reader.
///
/// Accepts:
///   tick_atom                          -> reads the next frame (paced at fps)
///   pushed_frame                       -> push mode: one decoded frame
///   (done_atom, seq, frame_outcome)    -> a frame left the pipeline: credit back
///   (refresh_atom, seq)                -> to the planner
///   stop_atom                          -> stops reading, drains, then reports
///   stats_atom                         -> replies source_counters (the planner's figures in them)
/// Sends (to `monitor`): (eos_atom, its address, source_counters) once
/// finished and drained.

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <map>
#include <optional>

#include "actors/frame_messages.hpp"
#include "actors/camera_reader_actor.hpp"
#include "actors/frame_planner_actor.hpp"
#include "connectors/image_file.hpp"
#include "connectors/scene_video.hpp"
#include "connectors/video_reader.hpp"
#include "core/base/flow_limiter.hpp"

namespace vlcache::actors {

struct source_settings {
  std::string name;
  stream_id stream = 0;
  connectors::video_reader_config video;
  preprocess_config preprocess;
  bool loop = false;
  int retries = 3;     ///< reopen attempts in a row before giving up (-1: forever)
  /// A network camera: a camera_reader on its own thread reads and pushes
  /// the frames; the end of its stream is an outage (counted), not the end.
  bool live = false;
  int max_in_flight = 4;
  int queue = 2;
  drop_policy policy = drop_policy::drop_oldest;
  double pace_fps = 0.0;  ///< 0: read as fast as credits allow
  /// The scene's truth when the source is a rendered scene folder: each
  /// frame carries one of its known questions (core/scenes/scene_questions).
  std::shared_ptr<const connectors::scene_truth> truth;
  /// The pipeline's own question ([llm] question), when it set one: asked
  /// of a scene's frames instead of theirs, scored where the frame knows it.
  std::string question;
};

struct source_counters {
  std::string name;
  stream_id stream = 0;
  std::uint64_t read = 0, encoded = 0, failed = 0, dropped_newest = 0, dropped_oldest = 0;
  std::uint64_t in_flight = 0, queued = 0, reopened = 0;
  std::uint64_t lost_in_transit = 0;  ///< network cameras: gaps in the sender's sequence
  std::uint64_t outages = 0;  ///< network sources: times the stream dropped
  double gap_seconds = 0;     ///< network sources: time without frames, last frame to first after reconnecting
  double decode_seconds = 0;  ///< decoding and preprocessing: the stage's standalone cost
  /// The gate at the latest frame: the camera's noise floor (sigma, levels;
  /// 0 unless [gate].noise_factor) and the MAD threshold it led to.
  double noise_floor = 0, mad_threshold = 0;
  /// View memory: frames that left the camera's view, and of them those
  /// that went back to a kept view instead of running in full.
  std::uint64_t view_cuts = 0, views_restored = 0;
  std::string error;  ///< why the source ended early, if it did
  [[nodiscard]] bool balanced() const noexcept {
    return read == encoded + failed + dropped_newest + dropped_oldest + in_flight + queued;
  }
};

struct source_state {
  source_settings settings;
  std::unique_ptr<connectors::video_reader> reader;
  planner_actor planner;  // hashing, gate and plan of this camera's frames (actors/frame_planner_actor)
  caf::actor monitor;
  std::optional<flow_limiter<frame_job>> flow;  // set at spawn from the settings
  source_counters counters;
  std::uint64_t next_wire_seq = 0;
  bool finished = false, reported = false;
  bool waiting_for_credit = false;  // block policy: a tick found no credit
  camera_reader_actor camera;  // a network camera's reader (actors/camera_reader_actor)
  static inline const char* name = "source";
};

/// What the probe asks of a source: its counters.
using source_stats_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<source_counters>>;
using source_actor = source_stats_actor::extend_with<credit_actor>::extend<
    caf::reacts_to<tick_atom>, caf::reacts_to<pushed_frame>, caf::reacts_to<stop_atom>, caf::reacts_to<camera_event>>;

/// `planner` plans the camera's frames (graph/ spawns it); the source links
/// to it, so one ends with the other.
source_actor::behavior_type camera_source(source_actor::stateful_pointer<source_state> self, source_settings settings,
                                          planner_actor planner, caf::actor monitor);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::source_counters)
