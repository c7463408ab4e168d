#pragma once
/// \file
/// The live numbers of a running pipeline, gathered from its actors on
/// request (from any thread: the HTTP server's, the runner's), and their two
/// renderings: Prometheus text for /metrics and per-stream JSON for the live
/// page. The run summary counts from the same snapshot, so a final scrape and
/// the summary agree.

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <nlohmann/json.hpp>

#include "actors/answerer_actor.hpp"
#include "actors/encoder_actor.hpp"
#include "actors/delivery_actor.hpp"
#include "actors/source_actor.hpp"

namespace vlcache::graph {

struct pipeline_snapshot {
  std::string pipeline;
  double uptime_s = 0;  ///< frozen at the end once the run is over
  bool running = true;  ///< false once the run is over (a view held open after it)
  std::vector<actors::source_counters> sources;  ///< by stream id
  actors::encoder_counters encoder;
  actors::latency_report latency;
  std::optional<actors::answerer_counters> answers;
  /// Stages that did not answer within the timeout (busy or gone): their
  /// figures above are absent or zero and must not be read as measured.
  std::vector<std::string> unanswered;
  bool insecure = false;           ///< [security] insecure = true: said in /metrics too
  std::uint64_t auth_refused = 0;  ///< peers the CURVE handlers refused
  [[nodiscard]] bool answered(const std::string& stage) const {
    return std::find(unanswered.begin(), unanswered.end(), stage) == unanswered.end();
  }
};

class pipeline_probe {
 public:
  pipeline_probe(caf::actor_system& sys, std::string pipeline);

  void set_stages(actors::encoder_stats_actor encoder, actors::delivery_stats_actor delivery,
                  actors::answerer_stats_actor answerer);
  void set_insecure(bool insecure) noexcept { insecure_ = insecure; }
  void add_source(const actors::source_stats_actor& source);
  /// A source that ended: its final counters stand for it from now on.
  void source_finished(const actors::source_counters& counters);

  /// The run is over: from now on snapshots say so (vlcache_up 0) and the uptime stops.
  void mark_ended();

  /// Asks every live stage (each answer waited for at most `timeout`).
  [[nodiscard]] pipeline_snapshot collect(std::chrono::milliseconds timeout = std::chrono::milliseconds(500));

 private:
  caf::actor_system& sys_;
  std::string pipeline_;
  bool insecure_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::optional<double> ended_at_s_;  // under mutex_
  std::mutex mutex_;
  actors::encoder_stats_actor encoder_;
  actors::delivery_stats_actor delivery_;
  actors::answerer_stats_actor answerer_;
  std::vector<actors::source_stats_actor> sources_;
  std::map<stream_id, actors::source_counters> finished_;
};

/// Prometheus text exposition format (version 0.0.4).
[[nodiscard]] std::string to_prometheus(const pipeline_snapshot& s);
/// {stream name: {read, encoded, dropped, failed, in_flight, answered, hit_rate, ...}}
[[nodiscard]] nlohmann::json per_stream_json(const pipeline_snapshot& s);

}  // namespace vlcache::graph
