#include "actors/source_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <limits>

#include "actors/actor_error.hpp"
#include "actors/camera_reader_actor.hpp"

#include "core/scene_questions.hpp"

namespace vlcache::actors {
namespace {

using self_ptr = source_actor::stateful_pointer<source_state>;

void report_if_done(self_ptr self) {
  auto& s = self->state;
  if (s.finished && !s.reported && s.counters.in_flight == 0 && s.queue.empty()) {
    s.reported = true;
    if (s.views && !s.views->kept().empty()) {  // the kept views' references and tokens go
      view_change m{s.settings.stream, {}};
      m.action.drop = s.views->clear();
      for (const auto& shard : s.shards) self->send(shard, m);
      self->send(s.encoder, m);
    }
    // The runner is dynamically typed: anon_send, naming who finished.
    caf::anon_send(s.monitor, eos_atom::value, caf::actor_cast<caf::actor_addr>(self), s.counters);
  }
}

/// Sends every frame whose predecessors have all gone on, in dispatch order.
void release_in_order(self_ptr self) {
  auto& s = self->state;
  for (auto it = s.reorder.find(s.released); it != s.reorder.end() && it->first == s.released;
       it = s.reorder.find(s.released)) {
    if (it->second) self->send(s.encoder, std::move(*it->second));
    s.reorder.erase(it);
    ++s.released;
  }
}

void fail_frame(self_ptr self, std::uint64_t index) {
  auto& s = self->state;
  --s.counters.in_flight;
  ++s.counters.failed;
  ++s.credits;
  s.reorder[index] = std::nullopt;
  release_in_order(self);
}

void gate_in_order(self_ptr self);

/// Plans the merged frame (drift control and budget) and commits the plan's
/// positions to the shards: every shard gets the commit before it is asked
/// about this stream's next frame (messages from one sender stay in order).
expected<compute_plan> plan_frame(self_ptr self, const frame_job& job, const gate_decision& merged) {
  auto& s = self->state;
  if (!s.drift) {
    auto d = drift_controller::make(static_cast<int>(merged.miss.size()), s.settings.drift);
    if (!d) return d.err();
    s.drift = std::make_unique<drift_controller>(std::move(*d));
  }
  auto plan = s.drift->plan(job.tag.stream, merged);
  if (!plan) return plan.err();
  s.drift->commit(job.tag.stream, *plan);
  s.holds_state = true;
  auto positions = std::make_shared<const std::vector<int>>(plan->positions);
  for (const auto& shard : s.shards)
    self->send(shard, commit_positions{job.tag.stream, job.tag.seq, job.signatures, positions});
  s.planned_seq = job.tag.seq + 1;
  return plan;
}

/// The encoder lost a frame of this stream (and dropped its tokens): forget
/// the references and drift state, so the next planned frame is full. Frames
/// planned before the reset that fail too are covered by it.
void reset_stream(self_ptr self, std::uint64_t failed_seq) {
  auto& s = self->state;
  if (s.reset_until && failed_seq < *s.reset_until) return;
  s.reset_until = s.planned_seq;
  s.holds_state = false;
  if (s.drift) s.drift->end_stream(s.settings.stream);
  auto all = std::make_shared<std::vector<int>>();
  for (int p = 0; p < s.grid_positions; ++p) all->push_back(p);  // the shards keep their bands
  for (const auto& shard : s.shards) self->send(shard, invalidate_positions{s.settings.stream, all});
}

/// Adds one shard's verdict on its band to the frame's.
void merge_into(gate_decision& merged, const gate_decision& part) {
  for (int p : part.miss_positions) {
    merged.miss[p] = 1;
    merged.score[p] = part.score[p];
  }
  // Every shard sees the frame's noise estimate; they agree unless one
  // never judged this stream before (then it reports less).
  merged.noise_floor = std::max(merged.noise_floor, part.noise_floor);
  merged.mad_threshold = std::max(merged.mad_threshold, part.mad_threshold);
}

void list_misses(gate_decision& merged) {
  merged.miss_positions.clear();
  for (std::size_t p = 0; p < merged.miss.size(); ++p)
    if (merged.miss[p]) merged.miss_positions.push_back(static_cast<int>(p));
}

std::shared_ptr<gate_decision> empty_decision(int n) {
  auto d = std::make_shared<gate_decision>();
  d->miss.assign(static_cast<std::size_t>(n), 0);
  d->score.assign(static_cast<std::size_t>(n), 0.0f);
  return d;
}

/// A shard failed to judge the frame: it fails, and the next frame is gated.
void gate_failed(self_ptr self, std::uint64_t index, const caf::error& e) {
  caf::aout(self) << self->state.settings.name << ": cache shard failed: " << self->system().render(e) << "\n";
  fail_frame(self, index);
}

/// Plans the judged frame, sends it on in dispatch order and gates the next.
void finish_gate(self_ptr self, std::uint64_t index, std::shared_ptr<frame_job> shared,
                 std::shared_ptr<gate_decision> merged) {
  auto plan = plan_frame(self, *shared, *merged);
  self->state.gating = false;
  if (!plan) {
    caf::aout(self) << self->state.settings.name << " frame " << shared->tag.seq << ": " << plan.err().message
                    << "\n";
    fail_frame(self, index);
  } else {
    shared->decision = merged;
    shared->plan = std::make_shared<const compute_plan>(std::move(*plan));
    shared->gated_at = steady::now();
    self->state.reorder[index] = std::move(*shared);
    release_in_order(self);
  }
  gate_in_order(self);
}

void gate(self_ptr self, std::uint64_t index, std::shared_ptr<frame_job> shared, bool restored);

/// The frame left the camera's view (core/view_memory): the shards, the
/// drift state and the encoder follow it to the kept view it matches, and
/// the frame is judged again there; or to a new view, where every position
/// misses. The change reaches the shards and the encoder before the frame's
/// commit and the frame itself (one sender, messages in order).
void leave_view(self_ptr self, std::uint64_t index, std::shared_ptr<frame_job> shared, view_key key) {
  auto& s = self->state;
  const auto restore = s.views->match(key);
  const auto action = s.views->leave(restore);
  s.views->seen(std::move(key));
  apply_view_action(*s.drift, s.settings.stream, action);
  const view_change change{s.settings.stream, action};
  for (const auto& shard : s.shards) self->send(shard, change);
  self->send(s.encoder, change);
  ++s.counters.view_cuts;
  if (restore) {
    ++s.counters.views_restored;
    gate(self, index, std::move(shared), true);
    return;
  }
  auto merged = empty_decision(s.grid_positions);
  std::fill(merged->miss.begin(), merged->miss.end(), 1);
  std::fill(merged->score.begin(), merged->score.end(), std::numeric_limits<float>::infinity());
  list_misses(*merged);
  finish_gate(self, index, std::move(shared), std::move(merged));
}

/// Asks every shard about one hashed frame, merges their verdicts, plans the
/// frame and sends it on (in dispatch order, through `reorder`); the next
/// frame is gated only after that. `restored`: judged again after its view
/// was restored (it does not cut again).
void gate(self_ptr self, std::uint64_t index, std::shared_ptr<frame_job> shared, bool restored) {
  auto& s = self->state;
  s.gating = true;
  const int n = shared->signatures->grid.count();
  s.grid_positions = n;
  auto merged = empty_decision(n);
  auto waiting = std::make_shared<std::size_t>(s.shards.size());
  auto failed = std::make_shared<bool>(false);
  for (const auto& shard : s.shards)
    self->request(shard, caf::infinite, decide_atom::value, *shared)
        .then(
            [self, shared, merged, waiting, failed, index, restored](const shard_decision& d) {
              merge_into(*merged, *d.decision);
              if (--*waiting > 0 || *failed) return;
              list_misses(*merged);
              auto& s = self->state;
              s.counters.noise_floor = merged->noise_floor;
              s.counters.mad_threshold = merged->mad_threshold;
              if (s.views && !restored) {
                auto key = view_key_of(*shared->signatures);
                if (s.views->is_cut(*merged, s.holds_state, key)) {
                  leave_view(self, index, shared, std::move(key));
                  return;
                }
                s.views->seen(std::move(key));
              }
              finish_gate(self, index, shared, merged);
            },
            [self, waiting, failed, index](const caf::error& e) {
              const bool last = --*waiting == 0;
              if (!*failed) {
                *failed = true;
                gate_failed(self, index, e);
              }
              if (last) {
                self->state.gating = false;
                gate_in_order(self);
              }
            });
}

/// Hashers run in parallel, but the shards must judge a stream's frames in
/// order, each after the previous one's plan was committed (each plan moves
/// the references the next frame is judged against): hashed frames wait here.
void gate_in_order(self_ptr self) {
  auto& s = self->state;
  while (!s.gating) {
    auto it = s.hashed.find(s.next_gate);
    if (it == s.hashed.end()) return;
    auto job = std::move(it->second);
    s.hashed.erase(it);
    const auto index = s.next_gate++;
    if (job) gate(self, index, std::move(job), false);
  }
}

/// The frame's first stages: a hasher from the pool, then every shard.
void dispatch(self_ptr self, frame_job job) {
  auto& s = self->state;
  --s.credits;
  ++s.counters.in_flight;
  const std::uint64_t index = s.dispatched++;
  const auto& hasher = s.hashers[s.next_hasher++ % s.hashers.size()];
  auto shared = std::make_shared<frame_job>(std::move(job));
  self->request(hasher, caf::infinite, hash_request{shared->tag, shared->image})
      .then(
          [self, shared, index](const hashed_frame& h) {
            shared->signatures = h.signatures;
            shared->hashed_at = steady::now();
            self->state.hashed[index] = shared;
            gate_in_order(self);
          },
          [self, index](const caf::error& e) {
            caf::aout(self) << self->state.settings.name << ": " << self->system().render(e) << "\n";
            self->state.hashed[index] = nullptr;
            fail_frame(self, index);
            gate_in_order(self);
          });
}

void admit(self_ptr self, const image_view& view, double capture_ms, steady::time_point started,
           std::optional<std::uint64_t> source_index);

bool open_reader(self_ptr self) {
  auto& s = self->state;
  auto r = connectors::video_reader::open(s.settings.video);
  if (!r) {
    s.counters.error = r.err().message;
    return false;
  }
  s.reader = std::move(*r);
  return true;
}

/// Reads one frame and applies the flow policy; false when the source ended.
bool read_one(self_ptr self) {
  auto& s = self->state;
  const auto started = steady::now();
  auto f = s.reader->read();
  if (!f) {
    const bool at_end = f.err().code == errc::not_found;
    if (at_end && !s.settings.loop) return false;
    if (!at_end) s.counters.error = f.err().message;
    if (!at_end && s.settings.retries >= 0 && static_cast<int>(s.counters.reopened) >= s.settings.retries)
      return false;
    ++s.counters.reopened;
    return open_reader(self);  // a retry or a loop: read again on the next tick
  }
  admit(self, f->view, f->capture_ms, started, f->source_index);
  return true;
}

/// The tick of a file source without a reader: one open attempt; gives up
/// after `retries` failures in a row.
void try_reopen(self_ptr self) {
  auto& s = self->state;
  ++s.counters.reopened;
  if (open_reader(self)) {
    s.counters.error.clear();
    self->send(self, tick_atom::value);
    return;
  }
  if (s.settings.retries >= 0 && static_cast<int>(s.counters.reopened) >= s.settings.retries) {  // -1: forever
    s.finished = true;
    report_if_done(self);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(500), tick_atom::value);
}

/// Preprocesses a decoded frame and dispatches, queues or drops it.
void admit(self_ptr self, const image_view& view, double capture_ms, steady::time_point started,
           std::optional<std::uint64_t> source_index) {
  auto& s = self->state;
  auto pre = preprocess(view, s.settings.preprocess);
  s.counters.decode_seconds += std::chrono::duration<double>(steady::now() - started).count();
  ++s.counters.read;
  if (!pre) {
    ++s.counters.failed;
    caf::aout(self) << s.settings.name << " frame " << s.counters.read - 1 << ": " << pre.err().message << "\n";
    return;
  }
  frame_job job;
  job.tag = {s.settings.stream, s.settings.name, s.counters.read - 1, capture_ms};
  job.source = caf::actor_cast<credit_actor>(self);
  job.image = std::make_shared<const preprocessed_image>(std::move(*pre));
  job.read_at = steady::now();
  // A rendered scene knows what this frame answers: the question travels
  // with the frame, so an answer can be scored against the truth.
  if (s.settings.truth && source_index && *source_index < s.settings.truth->questions.size())
    if (auto q = question_for(s.settings.truth->questions[*source_index], *source_index))
      job.asked = std::make_shared<const scene_question>(std::move(*q));
  if (s.credits > 0 && s.queue.empty()) {
    dispatch(self, std::move(job));
  } else if (s.settings.policy == flow_policy::drop_newest) {
    ++s.counters.dropped_newest;
  } else {
    s.queue.push_back(std::move(job));
    if (static_cast<int>(s.queue.size()) > s.settings.queue) {
      s.queue.pop_front();
      ++s.counters.dropped_oldest;
    }
  }
}

void schedule(self_ptr self) {
  auto& s = self->state;
  if (s.finished) return;
  if (s.settings.pace_fps > 0)
    self->delayed_send(self, std::chrono::microseconds(static_cast<long>(1e6 / s.settings.pace_fps)), tick_atom::value);
  else if (s.credits > 0 || s.settings.policy != flow_policy::block)
    self->send(self, tick_atom::value);
  // block without credit: the next done_atom ticks again
}

}  // namespace

source_actor::behavior_type camera_source(self_ptr self, source_settings settings, std::vector<hasher_actor> hashers,
                                          std::vector<cache_shard_actor> shards, encoder_actor encoder,
                                          caf::actor monitor) {
  auto& s = self->state;
  s.settings = std::move(settings);
  s.hashers = std::move(hashers);
  s.shards = std::move(shards);
  s.encoder = std::move(encoder);
  s.monitor = std::move(monitor);
  s.credits = s.settings.max_in_flight;
  s.counters.name = s.settings.name;
  s.counters.stream = s.settings.stream;
  if (s.settings.views.enabled()) {
    auto v = view_memory::make(s.settings.stream, s.settings.views);
    if (!v) {
      caf::aout(self) << s.settings.name << ": [views]: " << v.err().message << "\n";
      self->quit(to_caf_error(v.err()));
      return source_actor::behavior_type::make_empty_behavior();
    }
    s.views.emplace(std::move(*v));
  }
  if (s.settings.video.source.empty()) {
    // Push mode: frames arrive as pushed_frame messages (network cameras).
  } else if (s.settings.live) {
    // A camera on the network: its reader blocks, so it runs on its own thread
    // and pushes frames here; linked, it ends with this actor.
    s.camera = self->spawn<caf::detached + caf::linked>(camera_reader, s.settings.video, s.settings.retries,
                                                        caf::actor_cast<frame_pusher_actor>(self));
  } else if (!open_reader(self)) {
    caf::aout(self) << s.settings.name << ": " << s.counters.error << "\n";
    if (s.settings.retries == 0) {
      s.finished = true;
      report_if_done(self);
    } else {
      self->delayed_send(self, std::chrono::milliseconds(500), tick_atom::value);
    }
  } else {
    self->send(self, tick_atom::value);
  }
  return {
      [self](tick_atom) {
        auto& s = self->state;
        if (s.finished) return;
        if (s.settings.live) return;  // its reader pushes the frames
        if (!s.reader) {  // not open yet: retry as configured
          try_reopen(self);
          return;
        }
        if (s.settings.policy == flow_policy::block && s.credits == 0) {
          s.waiting_for_credit = true;  // the next done_atom ticks again
          return;
        }
        if (!read_one(self)) {
          s.finished = true;
          report_if_done(self);
          return;
        }
        schedule(self);
      },
      [self](refresh_atom, std::uint64_t seq) { reset_stream(self, seq); },
      [self](done_atom, std::uint64_t seq, frame_outcome outcome) {
        auto& s = self->state;
        if (outcome == frame_outcome::lost) reset_stream(self, seq);
        --s.counters.in_flight;
        ++(outcome == frame_outcome::encoded ? s.counters.encoded : s.counters.failed);
        ++s.credits;
        if (!s.queue.empty()) {
          auto job = std::move(s.queue.front());
          s.queue.pop_front();
          dispatch(self, std::move(job));
        }
        if (s.settings.policy == flow_policy::block && !s.finished && (s.settings.pace_fps <= 0 || s.waiting_for_credit)) {
          s.waiting_for_credit = false;
          self->send(self, tick_atom::value);
        }
        report_if_done(self);
      },
      [self](const pushed_frame& p) {
        auto& s = self->state;
        if (s.finished) return;
        if (s.next_wire_seq != 0 && p.wire_seq > s.next_wire_seq)
          s.counters.lost_in_transit += p.wire_seq - s.next_wire_seq;
        s.next_wire_seq = p.wire_seq + 1;
        admit(self, p.image->view(), p.capture_ms, steady::now(), std::nullopt);
      },
      [self](stop_atom) {
        if (self->state.camera) self->send(self->state.camera, stop_atom::value);
        self->state.finished = true;
        report_if_done(self);
      },
      [self](const camera_event& e) {
        auto& s = self->state;
        switch (e.kind) {
          case camera_event::what::lost:
            ++s.counters.outages;
            s.counters.error = e.why;
            caf::aout(self) << s.settings.name << ": stream lost (" << e.why << "); reconnecting\n";
            break;
          case camera_event::what::attempt_failed:
            ++s.counters.reopened;
            s.counters.error = e.why;
            break;
          case camera_event::what::reconnected:
            ++s.counters.reopened;
            s.counters.gap_seconds += e.gap_seconds;
            s.counters.error.clear();
            caf::aout(self) << s.settings.name << ": reconnected after " << e.gap_seconds << " s without frames\n";
            break;
          case camera_event::what::ended:
            caf::aout(self) << s.settings.name << ": ended after max_frames (" << s.settings.video.max_frames
                            << ")\n";
            s.finished = true;
            report_if_done(self);
            break;
          case camera_event::what::gave_up:
            ++s.counters.reopened;
            s.counters.error = e.why;
            caf::aout(self) << s.settings.name << ": giving up: " << e.why << "\n";
            s.finished = true;
            report_if_done(self);
            break;
        }
      },
      [self](stats_atom) {
        auto c = self->state.counters;
        c.queued = self->state.queue.size();
        return c;
      },
  };
}

}  // namespace vlcache::actors
