#include "actors/ingest_actor.hpp"
#include "core/elapsed.hpp"

#include <caf/all.hpp>

#include "connectors/frame_decoder.hpp"
#include "connectors/frame_socket.hpp"
#include "connectors/patch_canvas.hpp"
#include "connectors/wire_format.hpp"

namespace vlcache::actors {
namespace {

struct open_stream {
  source_actor source;
  steady::time_point last_seen;
};

}  // namespace

void ingest_actor(caf::blocking_actor* self, ingest_settings settings, stream_wiring wiring, caf::actor monitor) {
  ingest_counters counters;
  auto socket = connectors::frame_puller::open(settings.endpoint, settings.bind, settings.curve);
  if (!socket) {
    counters.error = socket.err().message;
    self->send(monitor, ingest_done_atom::value, counters);
    return;
  }
  caf::aout(self) << "ingest: " << (settings.bind ? "listening on " : "connected to ") << settings.endpoint << "\n";
  std::map<std::string, open_stream> streams;
  stream_id next_id = settings.first_stream;
  bool running = true, seen_any = false;
  std::map<std::string, stream_id> ids;
  connectors::patch_canvas_set canvases;  // streams whose cameras ship changed patches
  peer_limits limits(settings.limits);
  const auto started = steady::now();
  // Counted by reason (`key`), the first few of each logged with the peer.
  auto refuse = [&](const std::string& key, const std::string& reason, const connectors::pulled_frame& pulled) {
    const auto n = ++counters.rejected[key];
    if (n <= 5)
      caf::aout(self) << "ingest: rejected a message from "
                      << (pulled.peer.empty() ? "an unknown peer" : pulled.peer) << ": " << reason << "\n";
  };
  while (running) {
    for (auto& pulled : (*socket)->receive(std::chrono::milliseconds(50), 64)) {
      ++counters.messages;
      auto& frame = pulled.frame;
      if (frame) {
        const double now_s = seconds_since(started);
        const auto verdict = limits.admit(pulled.identity, frame->stream, pulled.bytes, now_s);
        if (verdict != peer_verdict::admit) {
          refuse(to_string(verdict), to_string(verdict), pulled);
          continue;
        }
      }
      expected<connectors::owned_image> image =
          !frame ? expected<connectors::owned_image>(frame.err())
          : frame->encoding == connectors::frame_encoding::patches ? canvases.apply(*frame)
                                                                   : connectors::decode_frame(*frame);
      if (!image) {
        const auto& reason = image.err().message;
        refuse(reason.substr(0, reason.find(':', 15)), reason, pulled);
        continue;
      }
      auto it = streams.find(frame->stream);
      if (it == streams.end()) {
        if (static_cast<int>(streams.size()) >= settings.max_streams) {
          ++counters.rejected["too many streams"];
          continue;
        }
        auto ss = settings.source;
        ss.name = frame->stream;
        ss.stream = next_id++;
        ids[frame->stream] = ss.stream;
        auto source = wiring.open(ss);
        self->send(monitor, new_stream_atom::value, source, frame->stream);
        it = streams.emplace(frame->stream, open_stream{source, steady::now()}).first;
        ++counters.streams_opened;
        seen_any = true;
      }
      it->second.last_seen = steady::now();
      self->send(it->second.source,
                 pushed_frame{std::make_shared<const connectors::owned_image>(std::move(*image)), frame->seq,
                              frame->capture_ms});
    }
    // Streams gone silent: close them and free their cache state.
    const auto now = steady::now();
    std::vector<std::string> idle;
    for (const auto& [name, st] : streams)
      if (seconds_between(st.last_seen, now) > settings.idle_timeout_s) idle.push_back(name);
    for (const auto& name : idle) {
      const stream_id id = ids[name];
      self->send(streams[name].source, stop_atom::value);
      wiring.close(id);
      streams.erase(name);
      canvases.forget(name);
      limits.stream_closed(name);
      ++counters.streams_closed;
    }
    if (settings.stop_when_idle && seen_any && streams.empty()) running = false;
    self->receive([&](stop_atom) { running = false; }, caf::after(std::chrono::seconds(0)) >> [] {});
  }
  for (auto& [name, st] : streams) {
    self->send(st.source, stop_atom::value);
    ++counters.streams_closed;
  }
  self->send(monitor, ingest_done_atom::value, counters);
}

}  // namespace vlcache::actors
