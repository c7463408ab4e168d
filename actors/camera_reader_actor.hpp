#pragma once
/// \file
/// The reader of a network camera (rtsp://, http://, ...), on a thread of its
/// own: its reads block on the network, so it decodes and pushes frames to
/// its camera's source actor, which never waits. The end of the stream is an
/// outage, not the end: the reader reconnects, backing off from 0.5 s to 5 s,
/// and reports what happened as camera_event messages.
///
/// Accepts:
///   tick_atom -> reads the next frame (or tries to reconnect); ticks itself
///   stop_atom -> quits
/// Sends (to `source`): pushed_frame per frame, camera_event per outage,
/// failed attempt, reconnect, and when it gives up (after `retries` failed
/// attempts in a row; never with -1).

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <memory>
#include <optional>

#include "actors/frame_messages.hpp"
#include "connectors/image_file.hpp"
#include "connectors/video_reader.hpp"

namespace vlcache::actors {

struct camera_event {
  /// ended: the reader handed out the camera's max_frames; it quits.
  enum class what : std::uint8_t { lost, attempt_failed, reconnected, gave_up, ended } kind = what::lost;
  std::string why;         ///< the reader's error (lost, attempt_failed, gave_up)
  double gap_seconds = 0;  ///< reconnected: last frame before the outage to this moment
};

/// A decoded frame handed to a source (by its camera reader, or by the
/// network ingest in push mode).
struct pushed_frame {
  std::shared_ptr<const connectors::owned_image> image;
  std::uint64_t wire_seq = 0;
  double capture_ms = 0;
};

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::pushed_frame)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::camera_event)

namespace vlcache::actors {

/// What a reader needs of its source: it takes frames and events.
using frame_pusher_actor = caf::typed_actor<caf::reacts_to<pushed_frame>, caf::reacts_to<camera_event>>;
using camera_reader_actor = caf::typed_actor<caf::reacts_to<tick_atom>, caf::reacts_to<stop_atom>>;

struct camera_reader_state {
  connectors::video_reader_config config;
  frame_pusher_actor source;
  int retries = -1;
  std::unique_ptr<connectors::video_reader> reader;
  int failed_opens = 0;  // in a row
  std::uint64_t pushed = 0;
  std::chrono::steady_clock::time_point last_frame_at{};
  std::optional<std::chrono::steady_clock::time_point> outage_since;
  static inline const char* name = "camera_reader";
};

/// Spawn detached and linked to its source.
camera_reader_actor::behavior_type camera_reader(camera_reader_actor::stateful_pointer<camera_reader_state> self,
                                                 connectors::video_reader_config config, int retries,
                                                 frame_pusher_actor source);

}  // namespace vlcache::actors
