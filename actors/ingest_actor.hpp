#pragma once
/// \file
/// Network ingest: a ZeroMQ PULL socket (bound or connected) that fans in
/// any number of camera nodes. Every message is validated (wire_format);
/// a bad one is counted by reason and logged with its peer, and never
/// reaches a stream. Each new stream name gets its own push-mode source
/// actor (flow control, accounting); a stream silent for `idle_timeout` is
/// closed and its cache state (gate references, token store) freed.
///
/// Runs as a blocking actor on its own thread (it waits on the socket).
/// Accepts: stop_atom -> closes every stream and stops.
/// Sends (to `monitor`): (new_stream_atom, source actor, name) for each new
/// stream; (ingest_done_atom, ingest_counters) when it stops.

#include <caf/blocking_actor.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <optional>

#include "actors/source_actor.hpp"
#include "connectors/curve_keys.hpp"
#include "connectors/peer_limits.hpp"

namespace vlcache::actors {

/// What the ingest refused so far, readable while it runs (for /metrics).
struct ingest_live_counters {
  std::mutex mutex;
  std::map<std::string, std::uint64_t> rejected;  ///< by reason, a fixed set
};

struct ingest_settings {
  std::string endpoint;
  bool bind = true;
  std::optional<connectors::curve_server_keys> curve;  ///< [security]: CURVE with an allow-list
  peer_limits_config limits;  ///< per peer: message size, rate, streams
  double idle_timeout_s = 5.0;
  int max_streams = 64;
  bool stop_when_idle = false;  ///< stop once every stream seen has closed
  stream_id first_stream = 0;   ///< ids of ingested streams start here
  source_settings source;       ///< template for the per-stream sources
  std::shared_ptr<ingest_live_counters> live;  ///< optional: refusals shared as they happen
};

struct ingest_counters {
  std::uint64_t messages = 0, streams_opened = 0, streams_closed = 0;
  std::map<std::string, std::uint64_t> rejected;  ///< by reason
  std::string error;                              ///< why the ingest could not run
};

using new_stream_atom = caf::atom_constant<caf::atom("newstream")>;
using ingest_done_atom = caf::atom_constant<caf::atom("ingestdn")>;

/// How the ingest opens and closes a stream; graph/ wires the stages behind
/// it, so the ingest knows none of them.
struct stream_wiring {
  std::function<source_actor(const source_settings&)> open;  ///< spawns the stream's source and its planner
  std::function<void(stream_id)> close;  ///< frees the stream's cache state (references, token store)
};

void ingest_actor(caf::blocking_actor* self, ingest_settings settings, stream_wiring wiring, caf::actor monitor);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::ingest_counters)
