#include "actors/encoder_actor.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <numeric>

#include "actors/remote_encoder.hpp"

namespace vlcache::actors {
namespace {

/// A shadow check: the full forward of the frame against its cached tokens;
/// below the floor, the stream's source is told to recompute everything.
void check(caf::stateful_actor<encoder_state>* self, const frame_job& job, const frame_result& r) {
  auto& s = self->state;
  const auto started = steady::now();
  auto full = s.encoder->encode_full({job.image->pixels.data()});
  s.shadow_seconds += std::chrono::duration<double>(steady::now() - started).count();
  if (!full) return;
  const auto& f = (*full)[0].features;
  const auto shape = f.shape();
  const auto agree = compare_tokens(r.features.data(), f.data(), shape[0], shape[1]);
  auto& c = s.shadow[job.tag.stream];
  ++c.checks;
  c.cosine_mean_sum += agree.cosine_mean;
  c.cosine_min = std::min(c.cosine_min, agree.cosine_min);
  c.last_mean = agree.cosine_mean;
  if (agree.cosine_mean < s.settings.shadow.min_cosine) {
    ++c.refreshes;
    self->send(job.source, refresh_atom::value, job.tag.seq);
  }
}

/// After a failed batch, the node is reached again (the same process, or a
/// new one on its address) before the next; at most one attempt a second.
/// Its token stores are gone with it, so each stream's next frame runs in
/// full there (the node's encoder holds no state for it).
bool reach_node(caf::stateful_actor<encoder_state>* self) {
  auto& s = self->state;
  if (!s.remote_down) return true;
  if (s.settings.stopping && *s.settings.stopping) return false;  // a hung node must not hold the stop
  const auto now = steady::now();
  if (now < s.next_reconnect) return false;
  s.next_reconnect = now + std::chrono::seconds(1);
  auto node = reach_encoder_node(self->system(), s.remote_host, s.remote_port, s.remote_tls);
  if (!node) return false;
  // A node back on the address may run another model: it must encode the
  // pipeline's grid, or the streams stay failed (counted) until one does.
  std::string problem;
  caf::scoped_actor asker{self->system()};
  asker->request(*node, std::chrono::seconds(5), encoder_info_atom::value)
      .receive(
          [&](const remote_encoder_info& info) {
            if (info.num_patches != s.num_patches || 3 * info.image_size * info.image_size != s.pixels_per_frame)
              problem = "it encodes " + std::to_string(info.image_size) + "/" + std::to_string(info.patch_size) +
                        ", not the pipeline's grid";
          },
          [&](const caf::error& e) { problem = "it did not describe itself: " + self->system().render(e); });
  if (!problem.empty()) {
    caf::aout(self) << "encoder: the node back at " << s.remote_host << ":" << s.remote_port << " is refused: "
                    << problem << "\n";
    return false;
  }
  s.remote = *node;
  s.remote_down = false;
  ++s.reconnects;
  caf::aout(self) << "encoder: reconnected to the node at " << s.remote_host << ":" << s.remote_port << "\n";
  return true;
}

void flush(caf::stateful_actor<encoder_state>* self) {
  auto& s = self->state;
  ++s.batch_id;  // any timer armed for the old batch is now stale
  if (s.pending.empty()) return;
  std::vector<frame_request> batch;
  for (auto& job : s.pending)
    batch.push_back({job.tag.stream, job.image->pixels.data(), job.plan->positions, job.plan->full});
  const auto started = steady::now();
  expected<std::vector<frame_result>> results = error{errc::io_error, "no encoder"};
  if (s.encoder) {
    results = s.encoder->encode(batch);
  } else if (reach_node(self)) {
    results = encode_remote(self->system(), s.remote, batch, s.pixels_per_frame, s.settings.remote_timeout,
                            s.settings.stopping.get());
    if (!results) {  // the node may be gone: reconnect before the next batch
      s.remote_down = true;
      ++s.remote_failures;
    }
  } else {
    results = error{errc::io_error, "remote encoder: the node at " + s.remote_host + ":" +
                                        std::to_string(s.remote_port) + " is unreachable; retrying every second"};
    ++s.remote_failures;
  }
  const auto now = steady::now();
  s.busy_seconds += std::chrono::duration<double>(now - started).count();
  for (std::size_t i = 0; i < s.pending.size(); ++i) {
    auto& job = s.pending[i];
    if (!results) {
      // The stream's tokens are gone (the encoder drops a half-written
      // store): its source resets its references, and frames it planned
      // before hearing of it fail here until a full one comes.
      s.lost.insert(job.tag.stream);
      self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::lost);
      continue;
    }
    const auto& r = (*results)[i];
    const auto computed = static_cast<std::uint64_t>(r.full ? s.num_patches : r.computed);
    s.tokens += computed;
    s.layer_tokens += static_cast<std::uint64_t>(r.layer_tokens);
    ++s.frames;
    auto& ps = s.per_stream[job.tag.stream];
    ++ps.first;
    ps.second += computed;
    const std::uint64_t index = s.stream_frames[job.tag.stream]++;
    if (s.encoder && shadow_due(s.settings.shadow, index, s.shadow_seconds, s.busy_seconds)) check(self, job, r);
    auto positions = std::make_shared<const std::vector<int>>(job.plan->positions);
    self->send(s.next, encoded_frame{std::move(job), r.features, std::move(positions), r.computed, r.full, now});
  }
  if (!results) caf::aout(self) << "encoder: batch failed: " << results.err().message << "\n";
  ++s.batches;
  s.pending.clear();
  s.pending_tokens = 0;
}

}  // namespace

caf::behavior encoder_actor(caf::stateful_actor<encoder_state>* self, encoder_backend backend,
                            encoder_settings settings, caf::actor next) {
  auto& s = self->state;
  s.encoder = std::move(backend.local);
  s.remote = std::move(backend.remote);
  s.remote_host = backend.remote_host;
  s.remote_port = backend.remote_port;
  s.remote_tls = backend.remote_tls;
  s.num_patches = s.encoder ? s.encoder->config().num_patches() : backend.num_patches;
  const int side = s.encoder ? s.encoder->config().image_size : backend.image_size;
  s.pixels_per_frame = 3 * side * side;
  s.settings = settings;
  s.next = std::move(next);
  return {
      [self](frame_job& job) {
        auto& s = self->state;
        for (const auto& p : s.pending)
          if (p.tag.stream == job.tag.stream) {
            flush(self);
            break;
          }
        if (!job.plan || (s.lost.count(job.tag.stream) != 0 && !job.plan->full)) {
          self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::lost);
          return;
        }
        s.lost.erase(job.tag.stream);
        s.pending_tokens += job.plan->full ? s.num_patches : static_cast<int>(job.plan->positions.size());
        s.pending.push_back(std::move(job));
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
        encoder_counters c;
        c.batches = s.batches;
        c.frames = s.frames;
        c.tokens = s.tokens;
        c.busy_seconds = s.busy_seconds;
        c.tokens_per_frame = s.num_patches;
        c.per_stream = s.per_stream;
        c.shadow = s.shadow;
        c.remote_failures = s.remote_failures;
        c.reconnects = s.reconnects;
        c.shadow_seconds = s.shadow_seconds;
        c.layer_tokens = s.layer_tokens;
        c.layers = s.encoder ? s.encoder->config().layers_used() : 0;
        if (s.encoder) {
          for (const auto& [stream, counts] : s.per_stream) {
            c.store_bytes[stream] = s.encoder->store_bytes(stream);
            const auto e = s.encoder->evictions(stream);
            c.evictions[stream] = {e.evictions, e.refills};
          }
          c.store_total = s.encoder->store_bytes_total();
          c.store_peak = s.encoder->store_bytes_peak();
          c.store_capacity = s.encoder->store_capacity();
        }
        return c;
      },
      [self](end_stream_atom, stream_id stream) {
        if (self->state.encoder) self->state.encoder->end_stream(stream);
        else self->send(self->state.remote, end_stream_atom::value, stream);
        self->state.lost.erase(stream);
        self->send(self->state.next, end_stream_atom::value, stream);  // after the stream's last frame
      },
  };
}

}  // namespace vlcache::actors
