#include "actors/delivery_actor.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>
#include <cmath>

namespace vlcache::actors {

delivery_actor::behavior_type delivery(delivery_actor::stateful_pointer<delivery_state> self,
                                           std::vector<sink_actor> sinks, delivery_links links) {
  self->state.sinks = std::move(sinks);
  self->state.answers = std::move(links.answers);
  self->state.view = std::move(links.view);
  self->state.tokens = std::move(links.tokens);
  return {
      [self](const encoded_frame& f) {
        auto& s = self->state;
        const auto now = steady::now();
        const auto& tag = f.job.tag;
        auto last = s.last_seq.find(tag.stream);
        if (last != s.last_seq.end() && tag.seq <= last->second) ++s.report.out_of_order;
        s.last_seq[tag.stream] = tag.seq;
        frame_record r;
        r.stream = tag.stream;
        r.stream_name = tag.stream_name;
        r.seq = tag.seq;
        r.capture_ms = tag.capture_ms;
        const auto shape = f.features.shape();
        r.tokens = shape.empty() ? 0 : static_cast<int>(shape[0]);
        r.dim = shape.size() < 2 ? 0 : static_cast<int>(shape[1]);
        r.computed = f.computed;
        r.full = f.full;
        const float* data = f.features.data();
        double norms = 0;
        for (int t = 0; t < r.tokens; ++t) {
          double n2 = 0;
          for (int d = 0; d < r.dim; ++d) n2 += double(data[t * r.dim + d]) * data[t * r.dim + d];
          norms += std::sqrt(n2);
        }
        r.token_norm_mean = r.tokens ? norms / r.tokens : 0;
        r.hash_ms = ms_between(f.job.read_at, f.job.hashed_at);
        r.gate_ms = ms_between(f.job.hashed_at, f.job.gated_at);
        r.encode_ms = ms_between(f.job.gated_at, f.encoded_at);
        r.total_ms = ms_between(f.job.read_at, now);
        s.report.stage_ms["hash"].add(r.hash_ms);
        s.report.stage_ms["gate"].add(r.gate_ms);
        s.report.stage_ms["encode"].add(r.encode_ms);
        s.report.stage_ms["end_to_end"].add(r.total_ms);
        ++s.report.frames;
        if (s.view) {
          // The grid side is the view's to fill in: it knows the pipeline's [input].
          s.view(connectors::view_frame{tag.stream_name, tag.seq, tag.capture_ms, 0, f.computed, f.full, f.positions,
                                        f.job.image});
        }
        if (s.tokens) s.tokens(tag, f.features);
        if (s.answers)
          self->send(s.answers,
                     answer_job{tag, f.features, f.full ? 1.0 : static_cast<double>(f.computed) / std::max(1, r.tokens),
                                r.encode_ms, f.job.read_at, f.job.asked ? f.job.asked->question : std::string{},
                                f.job.asked, f.job.image, nullptr, true});
        // The credit goes back once every sink has written the frame, so a
        // slow sink holds its camera back instead of growing a queue.
        auto source = f.job.source;
        const auto seq = tag.seq;
        if (s.sinks.empty()) {
          self->send(source, done_atom::value, seq, frame_outcome::encoded);
          return;
        }
        auto waiting = std::make_shared<std::size_t>(s.sinks.size());
        auto failed = std::make_shared<bool>(false);
        for (const auto& sink : s.sinks)
          self->request(sink, caf::infinite, r)
              .then(
                  [self, source, seq, waiting, failed]() {
                    if (--*waiting == 0)
                      self->send(source, done_atom::value, seq, *failed ? frame_outcome::failed : frame_outcome::encoded);
                  },
                  [self, source, seq, waiting, failed](const caf::error&) {
                    *failed = true;
                    if (--*waiting == 0) self->send(source, done_atom::value, seq, frame_outcome::failed);
                  });
      },
      [self](end_stream_atom, stream_id stream) {
        auto& s = self->state;
        if (s.answers) self->send(s.answers, end_stream_atom::value, stream);
      },
      [self](stats_atom) { return self->state.report; },
  };
}

}  // namespace vlcache::actors
