#pragma once
/// \file
/// The answer policy's stage: of the frames delivery hands on, it passes
/// to the answerer those the answer policy picks (core/cache/answer_policy), and
/// keeps each stream's latest frame so that a question asked on demand
/// about a stream becomes a question about that frame. With
/// `keep_kv_current`, the frames the policy passes over go to the answerer
/// as K/V updates.
///
/// Accepts:
///   answer_job                       -> to the answerer when the policy says so
///                                       (else as a K/V update, with keep_kv_current)
///   (ask_atom, stream name, question) -> the answerer's answer_record for the
///                                       stream's latest frame, or an error naming
///                                       the stream
///   (ask_atom, on_demand_question)   -> the same, with the question's own controls
///   (end_stream_atom, stream_id)     -> forgets the stream (and tells the answerer)

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <map>
#include <memory>
#include <string>

#include "actors/answerer_actor.hpp"
#include "core/cache/answer_policy.hpp"

namespace vlcache::actors {

struct answer_router_state {
  answerer_actor answerer;
  std::unique_ptr<answer_policy> policy;
  bool keep_kv_current = false;
  std::map<std::string, answer_job> latest;  // by stream name, for on-demand questions
  static inline const char* name = "answer_router";
};

using answer_router_actor =
    caf::typed_actor<caf::reacts_to<answer_job>,
                     caf::replies_to<ask_atom, std::string, std::string>::with<answer_record>,
                     caf::replies_to<ask_atom, on_demand_question>::with<answer_record>,
                     caf::reacts_to<end_stream_atom, stream_id>>;

answer_router_actor::behavior_type answer_router(answer_router_actor::stateful_pointer<answer_router_state> self,
                                                 answerer_actor answerer, answer_policy_config policy,
                                                 bool keep_kv_current);

}  // namespace vlcache::actors
