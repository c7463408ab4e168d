#include "connectors/answer_json.hpp"

namespace vlcache::connectors {

nlohmann::json answer_to_json(const answer& a) {
  nlohmann::json j{{"question", a.question},
                   {"text", a.text},
                   {"token_ids", a.ids},
                   {"stopped_on_eos", a.stopped_on_eos},
                   {"random_weights", a.random_weights},
                   {"prompt_tokens", a.prompt_tokens},
                   {"kv", {{"image_tokens", a.image_tokens},
                           {"image_recomputed", a.image_recomputed},
                           {"rows_computed", a.rows_computed},
                           {"full_prefill", a.full_prefill}}},
                   {"batch", a.batch},
                   {"latency_ms", {{"prefill", a.prefill_ms}, {"decode", a.decode_ms}}}};
  if (a.random_weights) j["notice"] = "random weights: this text is not an answer";
  return j;
}

std::string answer_json_line(const answer& a, const answer_origin& from) {
  auto j = answer_to_json(a);
  j["kind"] = "answer";
  j["stream"] = from.stream_name;
  j["seq"] = from.seq;
  j["capture_ms"] = from.capture_ms;
  j["on_demand"] = from.on_demand;
  j["latency_ms"]["encode"] = from.encode_ms;
  j["latency_ms"]["total"] = from.total_ms;
  j["kv"]["bytes"] = from.kv_bytes;
  if (from.known != nullptr) {
    j["truth"] = from.known->answer;
    j["question_kind"] = from.known->kind;
    j["correct"] = answer_matches(a.text, from.known->answer);
  }
  return to_json_line(j);
}

std::string to_json_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

}  // namespace vlcache::connectors
