#include "actors/sink_actor.hpp"

#include <caf/all.hpp>

#include "connectors/answer_json.hpp"
#include "connectors/frame_json.hpp"

namespace vlcache::actors {

std::string answer_line(const answer_record& r) {
  connectors::answer_origin from;
  from.stream_name = r.tag.stream_name;
  from.seq = r.tag.seq;
  from.capture_ms = r.tag.capture_ms;
  from.on_demand = r.on_demand;
  from.encode_ms = r.encode_ms;
  from.total_ms = r.total_ms;
  from.kv_bytes = r.kv_bytes;
  from.known = r.known.get();
  return connectors::answer_json_line(r.result, from);
}

sink_actor::behavior_type sink(sink_actor::stateful_pointer<sink_state> self,
                                      std::shared_ptr<connectors::line_sink> out) {
  return {
      [self, out](const frame_record& r) {
        out->write(r.stream_name, connectors::frame_json_line(r));
        ++self->state.lines;  // the (empty) reply frees the frame's credit
      },
      [self, out](const answer_record& r) {
        out->write(r.tag.stream_name, answer_line(r));
        ++self->state.lines;
      },
  };
}

}  // namespace vlcache::actors
