#include "actors/sink_actor.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "connectors/answer_json.hpp"

namespace vlcache::actors {

std::string to_json_line(const frame_record& r) {
  nlohmann::json j{{"kind", "frame"},
                   {"stream", r.stream_name},
                   {"seq", r.seq},
                   {"capture_ms", r.capture_ms},
                   {"tokens", r.tokens},
                   {"dim", r.dim},
                   {"tokens_computed", r.computed},
                   {"full", r.full},
                   {"token_norm_mean", r.token_norm_mean},
                   {"latency_ms", {{"hash", r.hash_ms}, {"gate", r.gate_ms}, {"encode", r.encode_ms}, {"total", r.total_ms}}}};
  return connectors::to_json_line(j);
}

std::string to_json_line(const answer_record& r) {
  auto j = connectors::answer_to_json(r.result);
  j["kind"] = "answer";
  j["stream"] = r.tag.stream_name;
  j["seq"] = r.tag.seq;
  j["capture_ms"] = r.tag.capture_ms;
  j["on_demand"] = r.on_demand;
  j["latency_ms"]["encode"] = r.encode_ms;
  j["latency_ms"]["total"] = r.total_ms;
  j["kv"]["bytes"] = r.kv_bytes;
  if (r.known) {
    j["truth"] = r.known->answer;
    j["question_kind"] = r.known->kind;
    j["correct"] = r.correct();
  }
  return connectors::to_json_line(j);
}

caf::behavior sink_actor(caf::stateful_actor<sink_state>* self, std::shared_ptr<connectors::line_sink> out) {
  return {
      [self, out](const frame_record& r) {
        out->write(r.stream_name, to_json_line(r));
        ++self->state.lines;  // the (empty) reply frees the frame's credit
      },
      [self, out](const answer_record& r) {
        out->write(r.tag.stream_name, to_json_line(r));
        ++self->state.lines;
      },
  };
}

}  // namespace vlcache::actors
