#pragma once
/// \file
/// Spawns and wires the actors of a validated pipeline spec, runs it until
/// every camera has finished and drained (or SIGINT/SIGTERM asked it to
/// stop), prints progress and a summary, and checks that every frame read
/// is accounted for.

#include <cstdint>
#include <functional>
#include <string>

#include "core/models/tensor_handle.hpp"
#include "graph/pipeline_spec.hpp"

namespace vlcache::graph {

struct run_options {
  std::string summary_json;  ///< write the summary here as JSON
  bool progress = true;
  std::string http;    ///< HOST:PORT for the live view and /metrics; overrides [view].http
  double hold_s = -1;  ///< serve this long after the run; < 0: [view].hold_s
  /// Every frame's tokens (stream, seq, [tokens, dim]) as the encoder made
  /// them, in order per stream; called on a pipeline thread. Empty: none.
  std::function<void(const std::string& stream, std::uint64_t seq, const tensor_handle& tokens)> on_tokens;
};

/// 0 on a clean run; 1 when the pipeline could not start or a frame went
/// unaccounted. Errors are printed naming what failed.
[[nodiscard]] int run_pipeline(const pipeline_spec& spec, const run_options& options);

}  // namespace vlcache::graph
