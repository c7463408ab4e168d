#pragma once
/// \file
/// The answerer: the language model's stage. Delivery hands it the
/// frames the answer policy picked and the on-demand questions; it keeps at
/// most one pending frame per stream (a newer frame supersedes an older one
/// that has not been answered yet, and is counted), answers the oldest
/// pending first (up to max_batch streams together: one prefill pass and
/// decoding in step), and sends each answer to every sink. It runs on its own
/// thread: an answer takes far longer than any other message.
/// With [llm] keep_kv_current it is also handed the frames between answers:
/// when no answer or question waits, it brings those streams' image K/V up
/// to date (the latest frame per stream; one pass for up to max_batch), so
/// the next answer's prefill computes one frame's changes and its question.
///
/// Accepts:
///   answer_job                        -> queued (latest per stream wins)
///   kv_update_atom, answer_job        -> queued (latest per stream wins), run when nothing else waits
///   ask_atom, answer_job (on demand)  -> replies answer_record, or an error for that request alone
///   end_stream_atom, stream_id        -> frees the stream's KV
///   auditor_atom, auditor_actor       -> the encoder that runs audited frames in full;
///                                        every audit_every-th answer of a stream is then
///                                        answered again from it when nothing else waits,
///                                        and the outcome goes back to the encoder
///   stats_atom                        -> replies answerer_counters

#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <deque>
#include <map>
#include <memory>

#include "actors/answer_messages.hpp"
#include "actors/audit_messages.hpp"
#include "actors/sink_actor.hpp"
#include "core/models/answer.hpp"
#include "core/models/answerer.hpp"
#include "core/base/latency_histogram.hpp"
#include "core/scenes/scene_questions.hpp"

namespace vlcache::actors {

struct answerer_counters {
  std::uint64_t answered = 0, on_demand = 0, superseded = 0, failed = 0;
  std::uint64_t pending = 0;  ///< frames, questions and audits waiting now
  latency_histogram prefill_ms, decode_ms, total_ms;
  /// K/V updates between answers: run, dropped (a newer frame or an answer
  /// of the stream came first), failed; and their time.
  std::uint64_t kv_updates = 0, kv_updates_dropped = 0, kv_updates_failed = 0;
  latency_histogram kv_update_ms;
  std::map<std::string, std::uint64_t> per_stream;
  std::uint64_t with_truth = 0, correct = 0;  ///< answers whose truth the scene knows, and those right
  /// The same per question kind (count_color, moving, ...): asked, right.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> per_kind;
  /// Answer audits: answered again from a full recompute, and agreeing;
  /// given up (no full forward within the encoder's budget, a newer audit
  /// of the stream, or an error); the time their answers took against all
  /// answering time.
  std::uint64_t audits = 0, audits_agreed = 0, audits_skipped = 0;
  double audit_seconds = 0, answer_seconds = 0;
  std::string last_error;
};

struct answerer_settings {
  std::string question;
  int max_on_demand = 16;  ///< queued on-demand questions; more are refused
  int max_batch = 4;       ///< waiting frames of different streams answered in one pass
  int audit_every = 0;     ///< audit every N-th answer of a stream (0: none)
};

/// An answer to audit: the job it answered and what it said.
struct pending_audit {
  answer_job job;
  std::string question, cached_text;
  tensor_handle full;  ///< the frame's full forward, once the encoder sent it
};

struct answerer_state {
  std::shared_ptr<answerer> llm;
  answerer_settings settings;
  std::vector<sink_actor> sinks;
  std::map<stream_id, answer_job> pending;
  std::map<stream_id, answer_job> kv_updates;  ///< frames between answers, latest per stream
  std::deque<std::pair<answer_job, caf::typed_response_promise<answer_record>>> on_demand;
  auditor_actor auditor;                      ///< the encoder, once the pipeline sent it
  std::map<stream_id, std::uint64_t> answers_of;  ///< per stream: answers so far (for the audit schedule)
  std::map<stream_id, pending_audit> audits;  ///< latest answer to audit per stream
  bool auditing = false;                      ///< an audit waits on the encoder's full forward
  bool scheduled = false;
  answerer_counters counters;
  static inline const char* name = "answerer";
};

using work_atom = caf::atom_constant<caf::atom("work")>;

/// What the probe asks of the answerer: its counters.
using answerer_stats_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<answerer_counters>>;
using answerer_actor =
    answerer_stats_actor::extend<caf::reacts_to<answer_job>, caf::reacts_to<kv_update_atom, answer_job>,
                                 caf::replies_to<ask_atom, answer_job>::with<answer_record>,
                                 caf::reacts_to<work_atom>, caf::reacts_to<end_stream_atom, stream_id>,
                                 caf::reacts_to<auditor_atom, auditor_actor>>;

/// Spawn detached: `system.spawn<caf::detached>(llm_answerer, ...)`.
answerer_actor::behavior_type llm_answerer(answerer_actor::stateful_pointer<answerer_state> self,
                                           std::shared_ptr<answerer> llm, answerer_settings settings,
                                           std::vector<sink_actor> sinks);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::answerer_counters)
