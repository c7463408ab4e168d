#pragma once
/// \file
/// A sink: writes one JSON line per encoded frame ("kind": "frame": the
/// token sequence's size and the cache work) and one per answer ("kind":
/// "answer") to its line sink (console, JSON-lines file or ZeroMQ PUB).
///
/// Accepts:
///   frame_record   -> one line; an empty reply once written
///   answer_record  -> one line

#include <caf/behavior.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/reassembly_actor.hpp"
#include "connectors/line_sink.hpp"

namespace vlcache::actors {

struct sink_state {
  std::uint64_t lines = 0;
  static inline const char* name = "sink";
};

caf::behavior sink_actor(caf::stateful_actor<sink_state>* self, std::shared_ptr<connectors::line_sink> out);

/// The sink line of an answer record (connectors/answer_json writes it).
[[nodiscard]] std::string answer_line(const answer_record& r);

}  // namespace vlcache::actors
