#pragma once
/// \file
/// The end of a run: the summary printed for a person and written as JSON
/// (schema in docs/architecture.md, "The stages and their messages"), from the facts the runner gathered. Checks that
/// every frame read is accounted for.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/answerer_actor.hpp"
#include "actors/ingest_actor.hpp"
#include "actors/source_actor.hpp"
#include "graph/pipeline_probe.hpp"

namespace vlcache::graph {

/// What a finished run knows about itself.
struct run_facts {
  std::string pipeline;
  double seconds = 0;
  std::string encoder_remote;
  std::optional<bool> random_weights;        ///< in-process encoder only
  std::optional<std::uint64_t> state_bytes;  ///< one stream's token store (in-process encoder only)
  std::vector<actors::source_counters> finished;  ///< every camera, network ones included
  double pace_fps = 0;    ///< the rate the paced cameras deliver together ([[camera]] pace_fps)
  int paced_cameras = 0;  ///< how many cameras are paced
  pipeline_snapshot final;                        ///< the probe's last collection
  std::optional<actors::ingest_counters> ingest;
  std::optional<actors::answerer_counters> answers;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> requests;  ///< served, rejected
};

/// Prints the summary and returns it; "accounted" says whether every frame
/// read was encoded, dropped or failed. What failed is printed first.
[[nodiscard]] nlohmann::json summarize(run_facts facts);

}  // namespace vlcache::graph
