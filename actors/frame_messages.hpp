#pragma once
/// \file
/// Messages that travel between the actors of one process. Every message
/// carries the frame's tag; pixels and signatures travel as shared handles
/// to immutable data, never as copies.

#include <cstdint>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>

#include "core/cache_stats.hpp"
#include "core/patch_signatures.hpp"
#include "core/preprocess.hpp"

namespace vlcache::actors {

/// Identifies a frame: its stream, its sequence number in that stream and
/// the capture time (milliseconds on the source's clock).
struct frame_tag {
  stream_id stream = 0;
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

}  // namespace vlcache::actors

// In-process only: these hold handles, so they are never serialised.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::hash_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::hashed_frame)
