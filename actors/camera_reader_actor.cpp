#include "actors/camera_reader_actor.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>

#include <algorithm>

namespace vlcache::actors {
namespace {

using self_ptr = camera_reader_actor::stateful_pointer<camera_reader_state>;
using steady = std::chrono::steady_clock;

std::chrono::milliseconds backoff(int failed_opens) {
  return std::chrono::milliseconds(std::min(5000, 500 << std::min(failed_opens, 4)));
}

void try_open(self_ptr self) {
  auto& s = self->state;
  auto r = connectors::video_reader::open(s.config);
  if (r) {
    s.reader = std::move(*r);
    s.failed_opens = 0;
    if (s.outage_since) {
      const double gap = seconds_since(*s.outage_since);
      s.outage_since.reset();
      self->send(s.source, camera_event{camera_event::what::reconnected, {}, gap});
    }
    self->send(self, tick_atom::value);
    return;
  }
  ++s.failed_opens;
  if (s.retries >= 0 && s.failed_opens >= s.retries) {
    self->send(s.source, camera_event{camera_event::what::gave_up, r.err().message, 0});
    self->quit();
    return;
  }
  self->send(s.source, camera_event{camera_event::what::attempt_failed, r.err().message, 0});
  self->delayed_send(self, backoff(s.failed_opens), tick_atom::value);
}

void read_next(self_ptr self) {
  auto& s = self->state;
  if (s.config.max_frames != 0 && s.pushed >= s.config.max_frames) {
    self->send(s.source, camera_event{camera_event::what::ended, {}, 0});
    self->quit();
    return;
  }
  auto f = s.reader->read();
  if (!f) {
    s.reader.reset();
    s.outage_since = s.pushed > 0 ? s.last_frame_at : steady::now();
    self->send(s.source, camera_event{camera_event::what::lost, f.err().message, 0});
    self->delayed_send(self, backoff(0), tick_atom::value);
    return;
  }
  auto image = std::make_shared<connectors::owned_image>();
  image->width = f->view.width;
  image->height = f->view.height;
  image->bgr.resize(static_cast<std::size_t>(image->width) * image->height * 3);
  for (int y = 0; y < image->height; ++y)
    std::copy_n(f->view.row(y), static_cast<std::size_t>(image->width) * 3,
                image->bgr.data() + static_cast<std::size_t>(y) * image->width * 3);
  s.last_frame_at = steady::now();
  self->send(s.source, pushed_frame{std::move(image), s.pushed++, f->capture_ms});
  self->send(self, tick_atom::value);
}

}  // namespace

camera_reader_actor::behavior_type camera_reader(self_ptr self, connectors::video_reader_config config, int retries,
                                                 frame_pusher_actor source) {
  self->state.config = std::move(config);
  self->state.retries = retries;
  self->state.source = std::move(source);
  self->send(self, tick_atom::value);
  return {
      [self](tick_atom) {
        if (self->state.reader) read_next(self);
        else try_open(self);
      },
      [self](stop_atom) { self->quit(); },
  };
}

}  // namespace vlcache::actors
