#include "actors/encoder_actor.hpp"

#include <caf/all.hpp>
#include <numeric>

#include "actors/remote_encoder.hpp"

namespace vlcache::actors {
namespace {

void flush(caf::stateful_actor<encoder_state>* self) {
  auto& s = self->state;
  ++s.batch_id;  // any timer armed for the old batch is now stale
  if (s.pending.empty()) return;
  std::vector<frame_request> batch;
  for (auto& [job, plan] : s.pending)
    batch.push_back({job.tag.stream, job.image->pixels.data(), plan.positions, plan.full});
  const auto started = steady::now();
  auto results = s.encoder ? s.encoder->encode(batch)
                          : encode_remote(self->system(), s.remote, batch, s.pixels_per_frame);
  const auto now = steady::now();
  s.busy_seconds += std::chrono::duration<double>(now - started).count();
  for (std::size_t i = 0; i < s.pending.size(); ++i) {
    auto& [job, plan] = s.pending[i];
    if (!results) {
      // The shards took this frame's misses as references: undo that.
      auto misses = std::make_shared<const std::vector<int>>(job.decision->miss_positions);
      for (const auto& shard : s.shards) self->send(shard, invalidate_positions{job.tag.stream, misses});
      self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::failed);
      continue;
    }
    s.drift->commit(job.tag.stream, plan);
    // Misses are references already; tokens the drift policy added are not,
    // and misses the budget deferred must miss again.
    std::vector<bool> planned(job.decision->miss.size(), false);
    for (int p : plan.positions) planned[p] = true;
    auto added = std::make_shared<std::vector<int>>();
    auto deferred = std::make_shared<std::vector<int>>();
    for (int p : plan.positions)
      if (!job.decision->miss[p]) added->push_back(p);
    for (int p : job.decision->miss_positions)
      if (!planned[p]) deferred->push_back(p);
    for (const auto& shard : s.shards) {
      if (!added->empty()) self->send(shard, commit_positions{job.tag.stream, job.tag.seq, job.signatures, added});
      if (!deferred->empty()) self->send(shard, invalidate_positions{job.tag.stream, deferred});
    }
    const auto& r = (*results)[i];
    const auto computed = static_cast<std::uint64_t>(r.full ? s.num_patches : r.computed);
    s.tokens += computed;
    ++s.frames;
    auto& ps = s.per_stream[job.tag.stream];
    ++ps.first;
    ps.second += computed;
    auto positions = std::make_shared<const std::vector<int>>(std::move(plan.positions));
    self->send(s.next, encoded_frame{std::move(job), r.features, std::move(positions), r.computed, r.full, now});
  }
  if (!results) caf::aout(self) << "encoder: batch failed: " << results.err().message << "\n";
  ++s.batches;
  s.pending.clear();
  s.pending_tokens = 0;
}

}  // namespace

caf::behavior encoder_actor(caf::stateful_actor<encoder_state>* self, encoder_backend backend,
                            encoder_settings settings, std::vector<caf::actor> shards, caf::actor next) {
  auto& s = self->state;
  s.encoder = std::move(backend.local);
  s.remote = std::move(backend.remote);
  s.num_patches = s.encoder ? s.encoder->config().num_patches() : backend.num_patches;
  const int side = s.encoder ? s.encoder->config().image_size : backend.image_size;
  s.pixels_per_frame = 3 * side * side;
  s.drift = std::make_unique<drift_controller>(std::move(*drift_controller::make(s.num_patches, settings.drift)));
  s.settings = settings;
  s.shards = std::move(shards);
  s.next = std::move(next);
  return {
      [self](frame_job& job) {
        auto& s = self->state;
        for (const auto& p : s.pending)
          if (p.first.tag.stream == job.tag.stream) {
            flush(self);
            break;
          }
        auto plan = s.drift->plan(job.tag.stream, *job.decision);
        if (!plan) {
          self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::failed);
          return;
        }
        s.pending_tokens += plan->full ? s.num_patches : static_cast<int>(plan->positions.size());
        s.pending.emplace_back(std::move(job), std::move(*plan));
        if (s.pending_tokens >= s.settings.batch_tokens) {
          flush(self);
        } else if (s.pending.size() == 1) {
          self->delayed_send(self, s.settings.batch_timeout, flush_atom::value, s.batch_id);
        }
      },
      [self](flush_atom, std::uint64_t id) {
        if (id == self->state.batch_id) flush(self);
      },
      [self](stats_atom) {
        const auto& s = self->state;
        encoder_counters c{s.batches, s.frames, s.tokens, s.busy_seconds, s.num_patches, s.per_stream, {}};
        if (s.encoder)
          for (const auto& [stream, counts] : s.per_stream) c.store_bytes[stream] = s.encoder->store_bytes(stream);
        return c;
      },
      [self](end_stream_atom, stream_id stream) {
        if (self->state.encoder) self->state.encoder->end_stream(stream);
        else self->send(self->state.remote, end_stream_atom::value, stream);
        self->state.drift->end_stream(stream);
        self->send(self->state.next, end_stream_atom::value, stream);  // after the stream's last frame
      },
  };
}

}  // namespace vlcache::actors
