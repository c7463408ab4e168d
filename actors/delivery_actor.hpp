#pragma once
/// \file
/// Frame delivery: the last shared stage. Checks per-stream order, records
/// stage latencies, hands each frame's token sequence (raster order,
/// projected; the encoder reassembled it) to every sink, and returns the
/// frame's credit to its source.
/// With a language model, every frame also goes to the answer router
/// (actors/answer_router_actor: the answer policy, on-demand questions).
///
/// Accepts:
///   encoded_frame              -> to every sink; once all have written it,
///                                 (done_atom, seq, encoded) to the frame's source
///   end_stream_atom, stream_id -> tells the answer router
///   stats_atom                 -> replies latency_report

#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <functional>
#include <map>

#include "actors/answer_router_actor.hpp"
#include "actors/frame_messages.hpp"
#include "actors/sink_actor.hpp"
#include "connectors/frame_json.hpp"
#include "connectors/live_view.hpp"
#include "core/base/latency_histogram.hpp"

namespace vlcache::actors {

struct latency_report {
  std::map<std::string, latency_histogram> stage_ms;  ///< hash, gate, encode, end_to_end
  std::uint64_t out_of_order = 0;
  std::uint64_t frames = 0;
};

/// Where delivery hands frames besides the sinks.
struct delivery_links {
  answer_router_actor answers;  ///< invalid: no language model
  /// The live view's tap (cheap: keeps a pointer at most a few times a second); empty: none.
  std::function<void(connectors::view_frame)> view;
  /// Every frame's full token sequence, in order per stream, for programs that
  /// embed the pipeline (called on the delivery thread); empty: none.
  std::function<void(const frame_tag&, const tensor_handle&)> tokens;
};

struct delivery_state {
  std::vector<sink_actor> sinks;
  answer_router_actor answers;
  std::function<void(connectors::view_frame)> view;
  std::function<void(const frame_tag&, const tensor_handle&)> tokens;
  std::map<stream_id, std::uint64_t> last_seq;
  latency_report report;
  static inline const char* name = "delivery";
};

/// What the probe asks of delivery: its latencies.
using delivery_stats_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<latency_report>>;
using delivery_actor =
    delivery_stats_actor::extend<caf::reacts_to<encoded_frame>, caf::reacts_to<end_stream_atom, stream_id>>;

delivery_actor::behavior_type delivery(delivery_actor::stateful_pointer<delivery_state> self,
                                           std::vector<sink_actor> sinks, delivery_links links);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::latency_report)
