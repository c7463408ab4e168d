#pragma once
/// \file
/// The JSON an answer leaves the system as (the `vlcache ask --json` output
/// and the "answer" lines of the pipeline's sinks). Schema in README.md.

#include <nlohmann/json.hpp>

#include "core/answer.hpp"

namespace vlcache::connectors {

/// question, text, token_ids, stopped_on_eos, random_weights, prompt_tokens,
/// and "kv": image tokens, recomputed, rows computed, full prefill; the
/// latency split "latency_ms": prefill, decode (callers add encode, total).
[[nodiscard]] nlohmann::json answer_to_json(const answer& a);

}  // namespace vlcache::connectors
