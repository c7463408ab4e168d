#include "actors/ingest_actor.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>

#include "connectors/frame_decoder.hpp"
#include "connectors/frame_socket.hpp"
#include "connectors/patch_canvas.hpp"
#include "connectors/wire_format.hpp"
#include "core/base/log_budget.hpp"
#include "core/base/stream_name.hpp"

namespace vlcache::actors {
namespace {

struct open_stream {
  source_actor source;
  steady::time_point last_seen;
};

}  // namespace

void ingest_actor(caf::blocking_actor* self, ingest_settings settings, stream_wiring wiring, caf::actor monitor) {
  ingest_counters counters;
  auto socket = connectors::frame_puller::open(settings.endpoint, settings.bind, settings.curve,
                                               settings.limits.max_message_bytes + 4096);  // + the header
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
  log_budget log_lines;
  const auto started = steady::now();
  // Counted by reason, a fixed set (never an error's own text, which an
  // attacker chooses); logged with the peer, the first few and then one
  // line per 10 s with how many were not.
  auto refuse = [&](const std::string& reason, const std::string& detail, const connectors::pulled_frame& pulled) {
    ++counters.rejected[reason];
    if (settings.live) {
      std::lock_guard<std::mutex> lock(settings.live->mutex);
      ++settings.live->rejected[reason];
    }
    if (auto line = log_lines.note(reason, seconds_since(started)))
      caf::aout(self) << "ingest: rejected a message from "
                      << (pulled.peer.empty() ? "an unknown peer" : printable(pulled.peer)) << ": " << detail
                      << (line->suppressed ? " (" + std::to_string(line->suppressed) + " more of these not logged)"
                                           : std::string())
                      << "\n";
  };
  // The peer's size and rate first, for every message, before it is parsed.
  const auto admit = [&](const std::string& identity, std::size_t bytes) {
    const auto v = limits.admit_message(identity, bytes, seconds_since(started));
    return v == peer_verdict::admit ? std::string() : std::string(to_string(v));
  };
  while (running) {
    for (auto& pulled : (*socket)->receive(std::chrono::milliseconds(50), 64, admit)) {
      ++counters.messages;
      if (!pulled.refused.empty()) {
        refuse(pulled.refused, pulled.refused, pulled);
        continue;
      }
      auto& frame = pulled.frame;
      if (!frame) {
        refuse("malformed message", frame.err().message, pulled);
        continue;
      }
      // Then whether the stream is the peer's (nothing registered yet).
      const bool known = streams.count(frame->stream) > 0;
      if (const auto v = limits.may_use(pulled.identity, frame->stream); v != peer_verdict::admit) {
        refuse(to_string(v), std::string(to_string(v)) + " ('" + frame->stream + "')", pulled);
        continue;
      }
      if (!known && static_cast<int>(streams.size()) >= settings.max_streams) {
        refuse("too many streams", "the pipeline holds " + std::to_string(settings.max_streams) +
                                       " streams ([ingest].max_streams)", pulled);
        continue;
      }
      expected<connectors::owned_image> image = frame->encoding == connectors::frame_encoding::patches
                                                    ? canvases.apply(*frame)
                                                    : connectors::decode_frame(*frame);
      if (!image) {
        refuse("undecodable image", image.err().message, pulled);
        continue;
      }
      auto it = streams.find(frame->stream);
      if (it == streams.end()) {
        limits.open(pulled.identity, frame->stream);  // a good frame: the stream is the peer's now
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
