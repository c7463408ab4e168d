#pragma once
/// \file
/// The JSON an answer leaves the system as (the `vlcache ask --json` output
/// and the "answer" lines of the pipeline's sinks). Schema in docs/architecture.md.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "core/models/answer.hpp"
#include "core/scenes/scene_questions.hpp"

namespace vlcache::connectors {

/// question, text, token_ids, stopped_on_eos, random_weights, prompt_tokens,
/// and "kv": image tokens, recomputed, rows computed, full prefill; the
/// latency split "latency_ms": prefill, decode (callers add encode, total).
[[nodiscard]] nlohmann::json answer_to_json(const answer& a);

/// Where an answer in a pipeline came from, for its sink line.
struct answer_origin {
  std::string stream_name;
  std::uint64_t seq = 0;
  double capture_ms = 0;
  bool on_demand = false;
  double encode_ms = 0, total_ms = 0;
  std::uint64_t kv_bytes = 0;
  const scene_question* known = nullptr;  ///< the scene's answer, when it knows one
};

/// The "kind": "answer" line of the pipeline's sinks: answer_to_json plus
/// stream, seq, latency, KV bytes, and truth / question_kind / correct.
[[nodiscard]] std::string answer_json_line(const answer& a, const answer_origin& from);

/// One JSON line as every sink and `vlcache ask --json` write it: ASCII only
/// (anything else as \uXXXX escapes), and bytes that are not valid UTF-8 (a
/// stream name off the network) become U+FFFD instead of an exception. An
/// answer's text already holds U+FFFD where the decoded byte-fallback pieces
/// did not form valid UTF-8 (sentencepiece replaces them): it shows as
/// \ufffd in the line and as the glyph on the live page, the same text.
[[nodiscard]] std::string to_json_line(const nlohmann::json& j);

}  // namespace vlcache::connectors
