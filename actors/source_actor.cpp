#include "actors/source_actor.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>

#include <algorithm>

#include "actors/actor_error.hpp"
#include "actors/camera_reader_actor.hpp"

#include "core/scenes/scene_questions.hpp"

namespace vlcache::actors {
namespace {

using self_ptr = source_actor::stateful_pointer<source_state>;

/// The counters with the flow limiter's figures in them.
source_counters counted(const source_state& s) {
  auto c = s.counters;
  c.in_flight = s.flow->in_flight();
  c.queued = s.flow->waiting();
  c.dropped_newest = s.flow->dropped_newest();
  c.dropped_oldest = s.flow->dropped_oldest();
  return c;
}

/// The counters with the planner's figures in them.
source_counters with_planner(source_counters c, const planner_counters& p) {
  c.noise_floor = p.noise_floor;
  c.mad_threshold = p.mad_threshold;
  c.view_cuts = p.view_cuts;
  c.views_restored = p.views_restored;
  return c;
}

void report_if_done(self_ptr self) {
  auto& s = self->state;
  if (s.finished && !s.reported && s.flow->idle()) {
    s.reported = true;
    // The planner lets the camera's kept views go and gives its last figures;
    // the runner is dynamically typed: anon_send, naming who finished.
    auto report = [self](const source_counters& c) {
      caf::anon_send(self->state.monitor, eos_atom::value, caf::actor_cast<caf::actor_addr>(self), c);
    };
    self->request(s.planner, std::chrono::seconds(10), stop_atom::value)
        .then([self, report](const planner_counters& p) { report(with_planner(counted(self->state), p)); },
              [self, report](const caf::error&) { report(counted(self->state)); });
  }
}

/// The frame goes to the camera's planner (hashing, gate, plan; then the encoder).
void dispatch(self_ptr self, std::optional<frame_job> job) {
  if (job) self->send(self->state.planner, std::move(*job));
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
  // max_frames bounds the camera, not one pass: a looping file stops there too.
  if (s.settings.video.max_frames != 0 && s.counters.read >= s.settings.video.max_frames) return false;
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
  s.counters.decode_seconds += seconds_since(started);
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
  if (s.settings.truth && source_index && *source_index < s.settings.truth->questions.size()) {
    const auto& known = s.settings.truth->questions[*source_index];
    if (!s.settings.question.empty()) {
      const auto it = std::find_if(known.begin(), known.end(),
                                   [&](const scene_question& q) { return q.question == s.settings.question; });
      if (it != known.end()) job.asked = std::make_shared<const scene_question>(*it);
    } else if (auto q = question_for(known, *source_index)) {
      job.asked = std::make_shared<const scene_question>(std::move(*q));
    }
  }
  dispatch(self, s.flow->admit(std::move(job)));
}

void schedule(self_ptr self) {
  auto& s = self->state;
  if (s.finished) return;
  if (s.settings.pace_fps > 0)
    self->delayed_send(self, std::chrono::microseconds(static_cast<long>(1e6 / s.settings.pace_fps)), tick_atom::value);
  else if (s.flow->may_read())
    self->send(self, tick_atom::value);
  // block without credit: the next done_atom ticks again
}

}  // namespace

source_actor::behavior_type camera_source(self_ptr self, source_settings settings, planner_actor planner,
                                          caf::actor monitor) {
  auto& s = self->state;
  s.settings = std::move(settings);
  s.monitor = std::move(monitor);
  s.flow.emplace(s.settings.max_in_flight, s.settings.queue, s.settings.policy);
  s.counters.name = s.settings.name;
  s.counters.stream = s.settings.stream;
  s.planner = std::move(planner);
  self->link_to(s.planner);  // one fails (or is stopped) with the other
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
        if (!s.flow->may_read()) {
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
      [self](refresh_atom, std::uint64_t seq) { self->send(self->state.planner, refresh_atom::value, seq); },
      [self](done_atom, std::uint64_t seq, frame_outcome outcome) {
        auto& s = self->state;
        if (outcome == frame_outcome::lost) self->send(s.planner, refresh_atom::value, seq);
        ++(outcome == frame_outcome::encoded ? s.counters.encoded : s.counters.failed);
        dispatch(self, s.flow->release());
        if (s.flow->policy() == drop_policy::block && !s.finished && (s.settings.pace_fps <= 0 || s.waiting_for_credit)) {
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
      [self](stats_atom) -> caf::result<source_counters> {
        auto c = counted(self->state);
        auto rp = self->make_response_promise<source_counters>();
        self->request(self->state.planner, std::chrono::seconds(5), stats_atom::value)
            .then([rp, c](const planner_counters& p) mutable { rp.deliver(with_planner(c, p)); },
                  [rp, c](const caf::error&) mutable { rp.deliver(c); });
        return rp;
      },
  };
}

}  // namespace vlcache::actors
