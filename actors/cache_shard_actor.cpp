#include "actors/cache_shard_actor.hpp"

#include <caf/all.hpp>

#include "actors/actor_error.hpp"

namespace vlcache::actors {

cache_shard_actor::behavior_type cache_shard(cache_shard_actor::stateful_pointer<cache_shard_state> self,
                                             reference_gate gate, int first, int last) {
  self->state.gate = std::make_unique<reference_gate>(std::move(gate));
  self->state.first = first;
  self->state.last = last;
  return {
      [self](decide_atom, const frame_job& job) -> caf::result<shard_decision> {
        auto& s = self->state;
        if (!job.signatures)
          return to_caf_error({errc::invalid_argument, "cache shard: stream " + std::to_string(job.tag.stream) +
                                                           " frame " + std::to_string(job.tag.seq) +
                                                           " has no signatures"});
        auto d = s.gate->decide(job.tag.stream, *job.signatures, s.first, s.last);
        if (!d) return to_caf_error(d.err());
        // References move only when the source commits the frame's plan.
        return shard_decision{std::make_shared<const gate_decision>(std::move(*d))};
      },
      [self](const view_change& m) { apply_view_action(*self->state.gate, m.stream, m.action); },
      [self](const commit_positions& c) -> void {
        auto& s = self->state;
        if (!c.signatures || !c.positions) return;  // nothing to record (never sent so)
        std::vector<int> mine;
        for (int p : *c.positions)
          if (p >= s.first && p < s.last) mine.push_back(p);
        if (auto st = s.gate->commit(c.stream, *c.signatures, mine, c.seq); !st)
          caf::aout(self) << "cache shard: stream " << c.stream << " frame " << c.seq << ": " << st.err().message << "\n";
      },
      [self](const invalidate_positions& m) -> void {
        auto& s = self->state;
        if (!m.positions) return;
        std::vector<int> mine;
        for (int p : *m.positions)
          if (p >= s.first && p < s.last) mine.push_back(p);
        if (auto st = s.gate->invalidate(m.stream, mine); !st)
          caf::aout(self) << "cache shard: stream " << m.stream << ": " << st.err().message << "\n";
      },
      [self](end_stream_atom, stream_id stream) { self->state.gate->end_stream(stream); },
  };
}

}  // namespace vlcache::actors
