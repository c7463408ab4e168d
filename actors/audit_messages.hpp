#pragma once
/// \file
/// Answer audits (docs/fidelity.md): every N-th answer of a stream is also
/// answered from a full recompute of its frame while the answerer is idle.
/// The answerer asks the encoder for the frame's full forward (which also
/// serves as a shadow check of the cached tokens) and tells it whether the
/// two answers agreed;
/// the encoder's fidelity controller tightens that camera when agreement
/// falls under its target.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <memory>

#include "actors/frame_messages.hpp"
#include "core/models/tensor_handle.hpp"

namespace vlcache::actors {

/// (full_atom, image) -> the frame's tokens from the full forward.
using full_atom = caf::atom_constant<caf::atom("full")>;
/// (audit_atom, stream, agreed): an audited answer's outcome.
using audit_atom = caf::atom_constant<caf::atom("audit")>;
/// (auditor_atom, auditor): the answerer's way to the encoder, sent once both run.
using auditor_atom = caf::atom_constant<caf::atom("auditor")>;

/// The frame to run in full, and its tokens.
struct full_request {
  stream_id stream = 0;
  std::shared_ptr<const preprocessed_image> image;
  tensor_handle cached;  ///< the tokens the answer used: the forward doubles as a shadow check
  /// An audit's forward (counted as such); false: an image sent with a
  /// question over HTTP, counted by the HTTP API.
  bool audit = true;
};
struct full_reply {
  tensor_handle features;
};

/// What the answerer needs of the encoder for audits.
using auditor_actor = caf::typed_actor<caf::replies_to<full_atom, full_request>::with<full_reply>,
                                       caf::reacts_to<audit_atom, stream_id, bool>>;

}  // namespace vlcache::actors

// In-process only: these hold handles, so they are never serialised.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::full_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::full_reply)
