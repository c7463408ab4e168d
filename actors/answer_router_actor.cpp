#include "actors/answer_router_actor.hpp"
#include "core/base/stream_name.hpp"

#include <caf/all.hpp>

#include "actors/actor_error.hpp"

namespace vlcache::actors {
namespace {

caf::result<answer_record> ask_latest(answer_router_actor::stateful_pointer<answer_router_state> self,
                                      on_demand_question q) {
  auto& s = self->state;
  auto it = s.latest.find(q.stream);
  if (it == s.latest.end())  // the other streams' names are not the asker's to learn
    return to_caf_error({errc::not_found, "no frame of stream '" + printable(q.stream) + "' yet (" +
                                              std::to_string(s.latest.size()) + " streams have frames)"});
  answer_job job = it->second;
  job.question = std::move(q.question);
  job.controls = std::move(q.controls);
  job.known = nullptr;  // a person's question: the scene's answer was for another
  return self->delegate(s.answerer, ask_atom::value, std::move(job));
}

}  // namespace

answer_router_actor::behavior_type answer_router(answer_router_actor::stateful_pointer<answer_router_state> self,
                                                 answerer_actor answerer, answer_policy_config policy,
                                                 bool keep_kv_current) {
  self->state.answerer = std::move(answerer);
  self->state.policy = std::make_unique<answer_policy>(policy);
  self->state.keep_kv_current = keep_kv_current;
  return {
      [self](answer_job& job) {
        auto& s = self->state;
        if (s.policy->due(job.tag.stream, job.changed_share)) self->send(s.answerer, job);
        else if (s.keep_kv_current) self->send(s.answerer, kv_update_atom::value, job);
        s.latest[job.tag.stream_name] = std::move(job);
      },
      [self](ask_atom, std::string& stream, std::string& question) -> caf::result<answer_record> {
        return ask_latest(self, {std::move(stream), std::move(question), nullptr});
      },
      [self](ask_atom, on_demand_question& q) -> caf::result<answer_record> { return ask_latest(self, std::move(q)); },
      [self](end_stream_atom, stream_id stream) {
        auto& s = self->state;
        for (auto it = s.latest.begin(); it != s.latest.end();)
          it = it->second.tag.stream == stream ? s.latest.erase(it) : std::next(it);
        s.policy->end_stream(stream);
        self->send(s.answerer, end_stream_atom::value, stream);
      },
  };
}

}  // namespace vlcache::actors
