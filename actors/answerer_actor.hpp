#pragma once
/// \file
/// The answerer: the language model's stage. Reassembly hands it the
/// frames the answer policy picked and the on-demand questions; it keeps at
/// most one pending frame per stream (a newer frame supersedes an older one
/// that has not been answered yet, and is counted), answers the oldest
/// pending first (up to max_batch streams together: one prefill pass and
/// decoding in step), and sends each answer to every sink. It runs on its own
/// thread: an answer takes far longer than any other message.
///
/// Accepts:
///   answer_job                        -> queued (latest per stream wins)
///   ask_atom, answer_job (on demand)  -> replies answer_record, or an error for that request alone
///   end_stream_atom, stream_id        -> frees the stream's KV
///   stats_atom                        -> replies answerer_counters

#include <caf/behavior.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <deque>
#include <map>
#include <memory>

#include "actors/frame_messages.hpp"
#include "core/answer.hpp"
#include "core/answerer.hpp"
#include "core/latency_histogram.hpp"
#include "core/scene_questions.hpp"

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
};

/// What a sink receives for an answer.
struct answer_record {
  frame_tag tag;
  answer result;
  bool on_demand = false;
  double encode_ms = 0.0;
  double total_ms = 0.0;  ///< from the frame's read to the answer
  std::uint64_t kv_bytes = 0;
  std::shared_ptr<const scene_question> known;  ///< what the scene says the answer is, or none
  [[nodiscard]] bool correct() const noexcept { return known && answer_matches(result.text, known->answer); }
};

struct answerer_counters {
  std::uint64_t answered = 0, on_demand = 0, superseded = 0, failed = 0;
  std::uint64_t pending = 0;  ///< frames and questions waiting now
  latency_histogram prefill_ms, decode_ms, total_ms;
  std::map<std::string, std::uint64_t> per_stream;
  std::uint64_t with_truth = 0, correct = 0;  ///< answers whose truth the scene knows, and those right
  std::string last_error;
};

struct answerer_settings {
  std::string question;
  int max_on_demand = 16;  ///< queued on-demand questions; more are refused
  int max_batch = 4;       ///< waiting frames of different streams answered in one pass
};

struct answerer_state {
  std::shared_ptr<answerer> llm;
  answerer_settings settings;
  std::vector<caf::actor> sinks;
  std::map<stream_id, answer_job> pending;
  std::deque<std::pair<answer_job, caf::response_promise>> on_demand;
  bool scheduled = false;
  answerer_counters counters;
  static inline const char* name = "answerer";
};

caf::behavior answerer_actor(caf::stateful_actor<answerer_state>* self, std::shared_ptr<answerer> llm,
                             answerer_settings settings, std::vector<caf::actor> sinks);

using ask_atom = caf::atom_constant<caf::atom("ask")>;
using work_atom = caf::atom_constant<caf::atom("work")>;

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answer_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answer_record)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answerer_counters)
