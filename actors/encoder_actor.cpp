#include "actors/encoder_actor.hpp"

#include <cstdio>
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/manager.hpp>
#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "actors/actor_error.hpp"
#include "actors/remote_encoder.hpp"

namespace vlcache::actors {
namespace {

/// A setting as written in a config: 0.2, 0.99, not 0.200000.
std::string number_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}


// The remote nodes are dynamically typed: a typed actor reaches them with
// anon_send (messages to one receiver stay in the order sent).
using encoder_self = encoder_actor::stateful_pointer<encoder_state>;

/// Counts a comparison of a stream's cached tokens with its full forward
/// (a shadow check, or an answer audit's forward) and feeds the fidelity
/// controller. `previous`: the stream's tokens of its previous frame, for
/// the naive error (null when unknown).
token_agreement record_check(encoder_self self, stream_id stream, const tensor_handle& cached,
                             const tensor_handle& full, const float* previous) {
  auto& s = self->state;
  const auto shape = full.shape();
  auto measured = measure_check(cached.data(), full.data(), previous, shape[0], shape[1]);
  const auto agree = measured.agreement();
  auto& c = s.shadow[stream];
  ++c.checks;
  c.cosine_mean_sum += agree.cosine_mean;
  c.cosine_min = std::min(c.cosine_min, agree.cosine_min);
  c.last_mean = agree.cosine_mean;
  if (!s.controller) return agree;
  const auto move = s.controller->observe(stream, std::move(measured));
  if (move.moved()) {
    const auto rep = s.controller->report(stream);
    const auto& ladder = s.controller->config().ladder;
    caf::aout(self) << "encoder: stream " << stream << " layer tolerance "
                    << number_text(ladder[static_cast<std::size_t>(move.from)]) << " -> "
                    << number_text(ladder[static_cast<std::size_t>(move.to)]) << " (target cosine "
                    << number_text(s.controller->config().target.cosine) << " at p"
                    << number_text(s.controller->config().target.percentile) << "; " << rep.checks << " checks)\n";
  }
  return agree;
}

/// A shadow check: the full forward of the frame against its cached tokens;
/// below the floor, the stream's source is told to recompute everything.
void check(encoder_self self, const frame_job& job, const frame_result& r) {
  auto& s = self->state;
  const auto started = steady::now();
  auto full = s.encoder->encode_full({job.image->pixels.data()});
  s.shadow_seconds += seconds_since(started);
  if (!full) return;
  const auto& f = (*full)[0].features;
  // The stream's previous tokens give the naive error (no recompute at all).
  auto prev = s.last_features.find(job.tag.stream);
  const float* previous =
      prev != s.last_features.end() && prev->second.shape() == f.shape() ? prev->second.data() : nullptr;
  const auto agree = record_check(self, job.tag.stream, r.features, f, previous);
  if (agree.cosine_mean < s.settings.shadow.min_cosine) {
    ++s.shadow[job.tag.stream].refreshes;
    self->send(job.source, refresh_atom::value, job.tag.seq);
  }
}

/// A stream's frame is checked once `every` frames passed since its last
/// check, while the checks stay within their share of encoder time; the
/// least-checked streams first, so a budget too small for all of them is
/// shared instead of going to whichever stream comes first in a batch.
bool check_due(encoder_state& s, stream_id stream) {
  const auto& c = s.settings.shadow;
  if (!c.enabled() || ++s.since_check[stream] < static_cast<std::uint64_t>(c.every)) return false;
  if (s.shadow_seconds > c.max_share * s.busy_seconds) return false;
  const auto checks_of = [&](stream_id id) {
    auto it = s.shadow.find(id);
    return it == s.shadow.end() ? std::uint64_t{0} : it->second.checks;
  };
  const auto mine = checks_of(stream);
  for (const auto& [other, frames] : s.stream_frames)
    if (other != stream && checks_of(other) < mine && s.since_check[other] >= static_cast<std::uint64_t>(c.every))
      return false;  // another stream, as overdue, has had fewer checks
  return true;
}

/// The attempt to reach a node failed: the next comes after the backoff
/// (1 s, doubled per failure up to 8 s).
void attempt_failed(encoder_self self, std::size_t index) {
  auto& n = self->state.nodes[index];
  n.reaching = false;
  n.next_reconnect = steady::now() + n.backoff;
  n.backoff = std::min(2 * n.backoff, std::chrono::milliseconds(8000));
}

/// The node answered and encodes the pipeline's grid: it takes work again.
void node_joined(encoder_self self, std::size_t index, encoder_node_actor node) {
  auto& s = self->state;
  auto& n = s.nodes[index];
  const bool first = !n.actor;  // a node that was down at the start joins; not a reconnection
  n.actor = std::move(node);
  n.down = false;
  n.reaching = false;
  n.backoff = std::chrono::milliseconds(1000);
  n.counters.up = true;
  if (!first) {
    ++n.counters.reconnects;
    ++s.reconnects;
  }
  caf::aout(self) << "encoder: " << (first ? "connected" : "reconnected") << " to the node at " << n.host << ":"
                  << n.port << "\n";
}

void node_refused(encoder_self self, std::size_t index, const std::string& problem) {
  const auto& n = self->state.nodes[index];
  caf::aout(self) << "encoder: the node back at " << n.host << ":" << n.port << " is refused: " << problem << "\n";
  attempt_failed(self, index);
}

/// Whether the node works now. A node that is down (its batch failed, or
/// it was not reached at the start) is tried again, the same process or a
/// new one on its address, in the background: a connection request to the
/// middleman and a description request, each with a timeout, so a hung
/// host never blocks the encoder. The node must encode the pipeline's grid.
/// Its token stores are gone with it: each stream's next frame runs in full.
bool reach_node(encoder_self self, std::size_t index) {
  auto& s = self->state;
  auto& n = s.nodes[index];
  if (!n.down) return true;
  if (n.reaching || steady::now() < n.next_reconnect) return false;
  if (s.settings.stopping && *s.settings.stopping) return false;  // no new attempt once stopping
  n.reaching = true;
  const caf::io::middleman_actor mm = s.remote_tls ? self->system().openssl_manager().actor_handle()
                                                   : self->system().middleman().actor_handle();
  constexpr auto limit = std::chrono::seconds(5);
  self->request(mm, limit, caf::connect_atom::value, n.host, n.port)
      .then(
          [self, index, limit](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>& ifs) {
            if (!ptr) return node_refused(self, index, "no actor is published there");
            if (ifs != self->system().message_types<encoder_node_actor>())
              return node_refused(self, index, "the actor published there is not an encoder node");
            auto node = caf::actor_cast<encoder_node_actor>(std::move(ptr));
            self->request(node, limit, encoder_info_atom::value)
                .then(
                    [self, index, node](const remote_encoder_info& info) {
                      const auto& st = self->state;
                      if (info.num_patches != st.num_patches ||
                          3 * info.image_size * info.image_size != st.pixels_per_frame)
                        return node_refused(self, index,
                                            "it encodes " + std::to_string(info.image_size) + "/" +
                                                std::to_string(info.patch_size) + ", not the pipeline's grid");
                      node_joined(self, index, node);
                    },
                    [self, index](const caf::error& e) {
                      node_refused(self, index, "it did not describe itself: " + self->system().render(e));
                    });
          },
          [self, index](const caf::error&) { attempt_failed(self, index); });
  return false;
}

std::size_t streams_on(const encoder_state& s, std::size_t node) {
  return static_cast<std::size_t>(
      std::count_if(s.home.begin(), s.home.end(), [node](const auto& h) { return h.second == node; }));
}

std::string where(const encoder_state& s, std::size_t home) {
  return home == encoder_state::local_home ? "this process"
                                           : s.nodes[home].host + ":" + std::to_string(s.nodes[home].port);
}

/// The node a stream's frames go to: its home while that node works; a new
/// or homeless stream goes to the working node holding the fewest streams
/// (its next frame then runs in full there). While no node works, the local
/// fallback when there is one (`local_home`; the stream goes back to a node
/// as soon as one works), else none.
std::optional<std::size_t> node_for(encoder_self self, stream_id stream) {
  auto& s = self->state;
  auto it = s.home.find(stream);
  if (it != s.home.end() && it->second != encoder_state::local_home && reach_node(self, it->second))
    return it->second;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < s.nodes.size(); ++i)
    if (reach_node(self, i) && (!best || streams_on(s, i) < streams_on(s, *best))) best = i;
  if (!best && s.encoder) best = encoder_state::local_home;
  if (!best) return std::nullopt;
  if (it != s.home.end() && it->second != *best) {
    caf::aout(self) << "encoder: stream " << stream << " moves from " << where(s, it->second) << " to "
                    << where(s, *best) << "\n";
    if (it->second == encoder_state::local_home) s.encoder->end_stream(stream);  // frees its store here
    s.full_next.insert(stream);  // its store stayed behind
  }
  s.home[stream] = *best;
  return best;
}

/// A node back, or new streams unevenly spread: moves streams from the
/// fullest working node to the emptiest until they differ by at most one;
/// each moved stream frees its store on the old node and runs its next frame
/// in full on the new one.
void rebalance(encoder_self self) {
  auto& s = self->state;
  for (std::size_t i = 0; i < s.nodes.size(); ++i) (void)reach_node(self, i);  // a node back joins when reached
  for (;;) {
    std::optional<std::size_t> most, least;
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      if (s.nodes[i].down) continue;
      if (!most || streams_on(s, i) > streams_on(s, *most)) most = i;
      if (!least || streams_on(s, i) < streams_on(s, *least)) least = i;
    }
    if (!most || streams_on(s, *most) <= streams_on(s, *least) + 1) return;
    auto moved = std::find_if(s.home.begin(), s.home.end(), [&](const auto& h) { return h.second == *most; });
    self->send(s.nodes[*most].actor, end_stream_atom::value, moved->first);  // sent as us: the node keys stores by sender
    moved->second = *least;
    s.full_next.insert(moved->first);
  }
}

/// Runs the batch where it belongs; one result per pending frame (an error
/// for the frames whose node failed or is unreachable).
std::vector<expected<frame_result>> run_batch(encoder_self self) {
  auto& s = self->state;
  const std::size_t n = s.pending.size();
  std::vector<expected<frame_result>> out(n, error{errc::io_error, "not run"});
  auto request_of = [&](std::size_t i) {
    const auto& job = s.pending[i];
    const bool full = job.plan->full || s.full_next.erase(job.tag.stream) > 0;
    frame_request req{job.tag.stream, job.image->pixels.data(), job.plan->positions, full};
    if (s.controller && s.nodes.empty()) req.layer_tolerance = s.controller->tolerance(job.tag.stream);
    return req;
  };
  auto run_here = [&](const std::vector<std::size_t>& members) {
    std::vector<frame_request> batch;
    for (auto i : members) batch.push_back(request_of(i));
    auto results = s.encoder->encode(batch);
    for (std::size_t m = 0; m < members.size(); ++m)
      out[members[m]] = results ? expected<frame_result>((*results)[m]) : results.err();
    return results.has_value();
  };
  if (s.nodes.empty()) {
    std::vector<std::size_t> all(n);
    std::iota(all.begin(), all.end(), std::size_t{0});
    run_here(all);
    return out;
  }
  rebalance(self);
  std::vector<node_batch> batches;
  std::vector<std::size_t> node_of_batch;
  std::vector<std::vector<std::size_t>> members;  // per batch: indices into pending
  std::vector<std::size_t> here;                  // the fallback's frames
  for (std::size_t i = 0; i < n; ++i) {
    const auto node = node_for(self, s.pending[i].tag.stream);
    if (!node) {
      out[i] = error{errc::io_error, "remote encoder: no node is reachable; retrying each with backoff"};
      ++s.remote_failures;
      continue;
    }
    if (*node == encoder_state::local_home) {
      here.push_back(i);
      continue;
    }
    auto b = std::find(node_of_batch.begin(), node_of_batch.end(), *node);
    const std::size_t k = static_cast<std::size_t>(b - node_of_batch.begin());
    if (b == node_of_batch.end()) {
      node_of_batch.push_back(*node);
      batches.push_back({s.nodes[*node].actor, {}});
      members.emplace_back();
    }
    batches[k].frames.push_back(request_of(i));
    members[k].push_back(i);
  }
  // Frames fall back only while no node works, so a batch is all here or
  // all on nodes, but for a node that comes back in the middle of it.
  if (!here.empty()) {
    const auto started = steady::now();
    const bool ok = run_here(here);
    s.fallback.busy_seconds += seconds_since(started);
    ++s.fallback.batches;
    if (ok) s.fallback.frames += here.size();
    else ++s.fallback.failures;
  }
  const auto started = steady::now();
  auto results = encode_remote(self->system(), batches, s.pixels_per_frame, s.settings.remote_timeout,
                               s.settings.stopping.get());
  const double took = seconds_since(started);
  for (std::size_t k = 0; k < batches.size(); ++k) {
    auto& node = s.nodes[node_of_batch[k]];
    node.counters.busy_seconds += took;
    ++node.counters.batches;
    if (!results[k] && results[k].err().code == errc::cancelled) {
      // Not waited for because the run stops: the node did not fail (its
      // frames fail, counted, and their streams' next frames run in full).
      caf::aout(self) << "encoder: batch on " << node.host << ":" << node.port << " not waited for: the run stops\n";
    } else if (!results[k]) {  // the node may be gone: reach it again before it gets work
      node.down = true;
      node.counters.up = false;
      ++node.counters.failures;
      ++s.remote_failures;
      caf::aout(self) << "encoder: batch on " << node.host << ":" << node.port << " failed: " << results[k].err().message
                      << "\n";
    } else {
      node.counters.frames += members[k].size();
    }
    for (std::size_t m = 0; m < members[k].size(); ++m)
      out[members[k][m]] = results[k] ? expected<frame_result>((*results[k])[m]) : results[k].err();
  }
  return out;
}

void flush(encoder_self self) {
  auto& s = self->state;
  ++s.batch_id;  // any timer armed for the old batch is now stale
  if (s.pending.empty()) return;
  const auto started = steady::now();
  auto results = run_batch(self);
  const auto now = steady::now();
  s.busy_seconds += seconds_between(started, now);
  bool failed = false;
  for (std::size_t i = 0; i < s.pending.size(); ++i) {
    auto& job = s.pending[i];
    if (!results[i]) {
      // The stream's tokens are gone (the encoder drops a half-written
      // store): its source resets its references, and frames it planned
      // before hearing of it fail here until a full one comes.
      s.lost.insert(job.tag.stream);
      self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::lost);
      failed = true;
      continue;
    }
    const auto& r = *results[i];
    const auto computed = static_cast<std::uint64_t>(r.full ? s.num_patches : r.computed);
    s.tokens += computed;
    s.layer_tokens += static_cast<std::uint64_t>(r.layer_tokens);
    ++s.frames;
    auto& ps = s.per_stream[job.tag.stream];
    ++ps.first;
    ps.second += computed;
    ++s.stream_frames[job.tag.stream];
    if (s.encoder && s.nodes.empty() && check_due(s, job.tag.stream)) {
      check(self, job, r);
      s.since_check[job.tag.stream] = 0;
    }
    if (s.controller) s.last_features[job.tag.stream] = r.features;
    auto positions = std::make_shared<const std::vector<int>>(job.plan->positions);
    self->send(s.next, encoded_frame{std::move(job), r.features, std::move(positions), r.computed, r.full, now});
  }
  if (failed && s.nodes.empty()) caf::aout(self) << "encoder: batch failed: " << results.front().err().message << "\n";
  ++s.batches;
  s.pending.clear();
  s.pending_tokens = 0;
}

}  // namespace

encoder_actor::behavior_type encoder(encoder_self self, encoder_backend backend, encoder_settings settings,
                                           delivery_actor next) {
  auto& s = self->state;
  s.encoder = std::move(backend.local);
  for (auto& n : backend.nodes) {
    node_link link;
    link.down = !n.actor;  // not reached at the start: tried like a node that went away
    link.counters.up = !link.down;
    link.actor = std::move(n.actor);
    link.host = n.host;
    link.port = n.port;
    link.counters.address = n.host + ":" + std::to_string(n.port);
    s.nodes.push_back(std::move(link));
  }
  s.remote_tls = backend.remote_tls;
  s.num_patches = s.encoder ? s.encoder->config().num_patches() : backend.num_patches;
  const int side = s.encoder ? s.encoder->config().image_size : backend.image_size;
  s.pixels_per_frame = 3 * side * side;
  s.settings = settings;
  if (settings.controller && s.encoder && s.nodes.empty()) {
    auto c = fidelity_controller::make(*settings.controller);
    if (c) s.controller = std::move(*c);
    else caf::aout(self) << "encoder: fidelity controller off: " << c.err().message << "\n";
  }
  s.next = std::move(next);
  return {
      [self](frame_job& job) {
        auto& s = self->state;
        for (const auto& p : s.pending)
          if (p.tag.stream == job.tag.stream) {
            flush(self);
            break;
          }
        if (!job.image || job.image->pixels.size() != static_cast<std::size_t>(s.pixels_per_frame)) {
          // Another preprocessing than the model's (or none): refused before it
          // reaches the kernels; the stream's tokens are not trusted after it.
          caf::aout(self) << "encoder: stream " << job.tag.stream << " frame " << job.tag.seq << ": "
                          << (job.image ? job.image->pixels.size() : 0) << " pixel values, the model takes "
                          << s.pixels_per_frame << "\n";
          s.lost.insert(job.tag.stream);
          self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::lost);
          return;
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
        if (s.controller)
          for (const auto& [stream, counts] : s.per_stream) c.control[stream] = s.controller->report(stream);
        c.remote_failures = s.remote_failures;
        c.reconnects = s.reconnects;
        for (std::size_t i = 0; i < s.nodes.size(); ++i) {
          c.nodes.push_back(s.nodes[i].counters);
          c.nodes.back().streams = streams_on(s, i);
        }
        if (!s.nodes.empty() && s.encoder) {
          c.nodes.push_back(s.fallback);
          c.nodes.back().streams = streams_on(s, encoder_state::local_home);
        }
        c.shadow_seconds = s.shadow_seconds;
        c.audit_forwards = s.audit_forwards;
        c.audit_seconds = s.audit_seconds;
        c.audit_refusals = s.audit_refusals;
        c.layer_tokens = s.layer_tokens;
        c.layers = s.encoder && s.nodes.empty() ? s.encoder->config().layers_used() : 0;
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
      [self](const view_change& m) {
        auto& s = self->state;
        // The stream's frames still waiting were planned in the view it leaves.
        if (std::any_of(s.pending.begin(), s.pending.end(),
                        [&](const frame_job& j) { return j.tag.stream == m.stream; }))
          flush(self);
        if (s.nodes.empty()) apply_view_action(*s.encoder, m.stream, m.action);
      },
      [self](full_atom, const full_request& req) -> caf::result<full_reply> {
        auto& s = self->state;
        if (!s.encoder || !s.nodes.empty() || !req.image ||
            req.image->pixels.size() != static_cast<std::size_t>(s.pixels_per_frame)) {
          s.audit_refusals += req.audit;
          return to_caf_error({errc::invalid_argument, std::string("no full forward for ") +
                                                           (req.audit ? "an audit" : "an image sent with a question") +
                                                           ": the model runs on a node, or the frame is not the "
                                                           "model's size"});
        }
        // Audits come every N-th answer, so their time is bounded by the
        // configuration; it is counted apart from the checks' and reported.
        const auto started = steady::now();
        auto full = s.encoder->encode_full({req.image->pixels.data()});
        if (!full) return to_caf_error(full.err());
        const auto& f = (*full)[0].features;
        // The forward doubles as a check of the tokens the answer used.
        if (!req.cached.empty() && req.cached.shape() == f.shape())
          (void)record_check(self, req.stream, req.cached, f, nullptr);
        if (req.audit) {
          s.audit_seconds += seconds_since(started);
          ++s.audit_forwards;
        }
        return full_reply{f};
      },
      [self](audit_atom, stream_id stream, bool agreed) {
        auto& s = self->state;
        if (!s.controller) return;
        const auto move = s.controller->observe_answer(stream, agreed);
        if (move.moved()) {
          const auto& ladder = s.controller->config().ladder;
          caf::aout(self) << "encoder: stream " << stream << " layer tolerance "
                          << number_text(ladder[static_cast<std::size_t>(move.from)]) << " -> "
                          << number_text(ladder[static_cast<std::size_t>(move.to)])
                          << " (an audited answer differed; agreement "
                          << number_text(s.controller->report(stream).agreement) << ")\n";
        }
      },
      [self](end_stream_atom, stream_id stream) {
        auto& s = self->state;
        if (s.nodes.empty()) {
          s.encoder->end_stream(stream);  // the controller keeps the stream's report for the summary
        } else if (auto h = s.home.find(stream); h != s.home.end()) {
          if (h->second == encoder_state::local_home) s.encoder->end_stream(stream);
          else self->send(s.nodes[h->second].actor, end_stream_atom::value, stream);
          s.home.erase(h);
        }
        s.full_next.erase(stream);
        self->state.lost.erase(stream);
        self->send(self->state.next, end_stream_atom::value, stream);  // after the stream's last frame
      },
  };
}

}  // namespace vlcache::actors
