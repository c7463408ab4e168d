#pragma once
/// \file
/// A sink: writes one JSON line per encoded frame ("kind": "frame": the
/// token sequence's size and the cache work) and one per answer ("kind":
/// "answer") to its line sink (console, JSON-lines file or ZeroMQ PUB).
///
/// Accepts:
///   frame_record   -> one line; an empty reply once written
///   answer_record  -> one line

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>

#include "actors/answer_messages.hpp"
#include "connectors/frame_json.hpp"
#include "connectors/line_sink.hpp"

namespace vlcache::actors {

/// What a sink receives about an encoded frame (its line: connectors/).
using frame_record = connectors::frame_record;

using sink_actor = caf::typed_actor<caf::reacts_to<frame_record>, caf::reacts_to<answer_record>>;

struct sink_state {
  std::uint64_t lines = 0;
  static inline const char* name = "sink";
};

sink_actor::behavior_type sink(sink_actor::stateful_pointer<sink_state> self,
                                      std::shared_ptr<connectors::line_sink> out);

/// The sink line of an answer record (connectors/answer_json writes it).
[[nodiscard]] std::string answer_line(const answer_record& r);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::connectors::frame_record)
