#include "actors/frame_planner_actor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <limits>

#include "actors/actor_error.hpp"

namespace vlcache::actors {
namespace {

using self_ptr = planner_actor::stateful_pointer<planner_state>;

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

/// The frame could not be planned: it leaves the pipeline here, failed (its
/// source gets the credit back), and the frames after it go on.
void fail_frame(self_ptr self, std::uint64_t index, const frame_job& job) {
  self->send(job.source, done_atom::value, job.tag.seq, frame_outcome::failed);
  self->state.reorder[index] = std::nullopt;
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
void gate_failed(self_ptr self, std::uint64_t index, const frame_job& job, const caf::error& e) {
  caf::aout(self) << self->state.settings.name << ": cache shard failed: " << self->system().render(e) << "\n";
  fail_frame(self, index, job);
}

/// Plans the judged frame, sends it on in dispatch order and gates the next.
void finish_gate(self_ptr self, std::uint64_t index, std::shared_ptr<frame_job> shared,
                 std::shared_ptr<gate_decision> merged) {
  auto plan = plan_frame(self, *shared, *merged);
  self->state.gating = false;
  if (!plan) {
    caf::aout(self) << self->state.settings.name << " frame " << shared->tag.seq << ": " << plan.err().message
                    << "\n";
    fail_frame(self, index, *shared);
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

/// The frame left the camera's view (core/cache/view_memory): the shards, the
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
                if (s.views->is_cut(*merged, key)) {
                  leave_view(self, index, shared, std::move(key));
                  return;
                }
                s.views->seen(std::move(key));
              }
              finish_gate(self, index, shared, merged);
            },
            [self, shared, waiting, failed, index](const caf::error& e) {
              const bool last = --*waiting == 0;
              if (!*failed) {
                *failed = true;
                gate_failed(self, index, *shared, e);
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
          [self, shared, index](const caf::error& e) {
            caf::aout(self) << self->state.settings.name << ": " << self->system().render(e) << "\n";
            self->state.hashed[index] = nullptr;
            fail_frame(self, index, *shared);
            gate_in_order(self);
          });
}


}  // namespace

planner_actor::behavior_type frame_planner(self_ptr self, planner_settings settings, std::vector<hasher_actor> hashers,
                                           std::vector<cache_shard_actor> shards, encoder_actor encoder) {
  auto& s = self->state;
  s.settings = std::move(settings);
  s.hashers = std::move(hashers);
  s.shards = std::move(shards);
  s.encoder = std::move(encoder);
  if (s.settings.views.enabled()) {
    auto v = view_memory::make(s.settings.stream, s.settings.views);
    if (!v) {
      caf::aout(self) << s.settings.name << ": [views]: " << v.err().message << "\n";
      self->quit(to_caf_error(v.err()));
      return planner_actor::behavior_type::make_empty_behavior();
    }
    s.views.emplace(std::move(*v));
  }
  return {
      [self](frame_job& job) { dispatch(self, std::move(job)); },
      [self](refresh_atom, std::uint64_t seq) { reset_stream(self, seq); },
      [self](stats_atom) { return self->state.counters; },
      [self](stop_atom) {
        auto& s = self->state;
        if (s.views && !s.views->kept().empty()) {  // the kept views' references and tokens go
          view_change m{s.settings.stream, {}};
          m.action.drop = s.views->clear();
          for (const auto& shard : s.shards) self->send(shard, m);
          self->send(s.encoder, m);
        }
        return s.counters;
      },
  };
}

}  // namespace vlcache::actors
