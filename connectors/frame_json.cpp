#include "connectors/frame_json.hpp"

#include <nlohmann/json.hpp>

#include "connectors/answer_json.hpp"

namespace vlcache::connectors {

std::string frame_json_line(const frame_record& r) {
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
  return to_json_line(j);
}

}  // namespace vlcache::connectors
