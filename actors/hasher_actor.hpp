#pragma once
/// \file
/// The hasher: computes the per-patch signatures of preprocessed frames.
/// Several hashers form a pool; each owns its signature engine.
///
/// Accepts:  hash_request  -> replies hashed_frame, or an error (category
///           "vlcache", errc::invalid_image) naming what is wrong with the frame.

#include <caf/typed_actor.hpp>
#include <caf/replies_to.hpp>

#include "actors/frame_messages.hpp"
#include <memory>

namespace vlcache::actors {

using hasher_actor = caf::typed_actor<caf::replies_to<hash_request>::with<hashed_frame>>;

/// Spawn with `system.spawn(hasher, engine)`. The engine is injected (and
/// may be shared by a pool): it is immutable after construction.
hasher_actor::behavior_type hasher(std::shared_ptr<const signature_engine> engine);

}  // namespace vlcache::actors
