#pragma once
/// \file
/// Messages about answers: the frames handed to the answerer and what the
/// sinks receive for each answer.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <memory>
#include <string>

#include "actors/frame_messages.hpp"
#include "core/models/answer.hpp"
#include "core/models/answerer.hpp"
#include "core/scenes/scene_questions.hpp"

namespace vlcache::actors {

/// A frame to answer about.
struct answer_job {
  frame_tag tag;
  tensor_handle features;
  double changed_share = 1.0;
  double encode_ms = 0.0;
  steady::time_point read_at;
  std::string question;  ///< empty: the configured one
  std::shared_ptr<const scene_question> known;  ///< the question's known answer (scene cameras), or none
  std::shared_ptr<const preprocessed_image> image;  ///< the frame, for an answer audit's full forward
  /// An on-demand question's own sampling, stop strings and streaming; none: the answerer's.
  std::shared_ptr<const ask_controls> controls;
  /// To the sinks (and per-stream counts) when answered; an image sent
  /// with an HTTP request is no camera's, so its answer is not.
  bool publish = true;
};

/// A question on demand about a camera's latest frame, with its own controls (may be null).
struct on_demand_question {
  std::string stream;
  std::string question;
  std::shared_ptr<const ask_controls> controls;
};

/// What a sink receives for an answer.
struct answer_record {
  frame_tag tag;
  answer result;
  bool on_demand = false;
  bool published = true;  ///< sent to the sinks (false: an image sent with a request)
  double changed_share = 1.0;  ///< the frame's patch tokens the encoder computed
  double encode_ms = 0.0;
  double total_ms = 0.0;  ///< from the frame's read to the answer
  std::uint64_t kv_bytes = 0;
  std::shared_ptr<const scene_question> known;  ///< what the scene says the answer is, or none
  [[nodiscard]] bool correct() const noexcept { return known && answer_matches(result.text, known->answer); }
};

/// (ask_atom, ...): a question on demand about a stream's latest frame.
using ask_atom = caf::atom_constant<caf::atom("ask")>;
/// (kv_update_atom, answer_job): a frame nobody asks about, to keep the
/// stream's image K/V current with ([llm] keep_kv_current).
using kv_update_atom = caf::atom_constant<caf::atom("kvupdate")>;

}  // namespace vlcache::actors

// In-process only: these hold handles, so they are never serialised.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answer_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answer_record)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::on_demand_question)
