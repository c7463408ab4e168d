#include "app/camera_command.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "connectors/frame_decoder.hpp"
#include "connectors/frame_socket.hpp"
#include "connectors/patch_shipper.hpp"
#include "connectors/video_reader.hpp"
#include "connectors/wire_format.hpp"
#include "graph/cache_spec.hpp"

namespace vlcache::app {

void add_camera_command(CLI::App& app, camera_options& o) {
  auto* c = app.add_subcommand("camera", "A camera node: push frames of a video or stream to a pipeline over ZeroMQ");
  c->add_option("--source", o.source, "Video file, image folder, image pattern or URL")->required();
  c->add_option("--to", o.to, "The pipeline's [ingest] endpoint, tcp://HOST:PORT")->required();
  c->add_option("--stream", o.stream, "Stream name (default: the source's file name)");
  c->add_option("--fps", o.fps, "Frames per second to send (0: the source's own rate)")->default_val(0.0);
  c->add_option("--frames", o.frames, "Frames to send (0: until the source ends)")->default_val(0);
  c->add_option("--start", o.start, "Source frames to skip first")->default_val(0);
  c->add_option("--quality", o.quality, "JPEG quality")->default_val(85)->check(CLI::Range(1, 100));
  c->add_flag("--raw", o.raw, "Send raw BGR instead of JPEG");
  c->add_flag("--ship-patches", o.ship_patches,
              "Preprocess and gate here; send only changed patches of the encoder's input (raw BGR)");
  c->add_option("--image-size", o.image_size, "With --ship-patches: the pipeline's [input].image_size")->default_val(224);
  c->add_option("--patch-size", o.patch_size, "With --ship-patches: the pipeline's [input].patch_size")->default_val(16);
  c->add_flag("--pad-to-square", o.pad_to_square, "With --ship-patches: LLaVA's pad-to-square, as the pipeline's camera");
  c->add_option("--keyframe-every", o.keyframe_every, "With --ship-patches: send every patch each N messages")
      ->default_val(50)->check(CLI::Range(1, 100000));
  add_client_key_options(c, o.keys);
}

int run_camera(const camera_options& o) {
  connectors::video_reader_config rc;
  rc.source = o.source;
  rc.sample_fps = o.fps;
  rc.start_frame = static_cast<std::uint64_t>(o.start);
  rc.max_frames = static_cast<std::uint64_t>(o.frames);
  auto reader = connectors::video_reader::open(rc);
  if (!reader) {
    std::fprintf(stderr, "error: %s\n", reader.err().message.c_str());
    return 2;
  }
  const std::string stream = o.stream.empty() ? std::filesystem::path(o.source).stem().string() : o.stream;
  const double fps = o.fps > 0 ? o.fps : ((*reader)->source_fps() > 0 ? (*reader)->source_fps() : 10.0);
  auto keys = load_client_keys(o.keys);
  if (!keys) {
    std::fprintf(stderr, "error: %s\n", keys.err().message.c_str());
    return 2;
  }
  auto push = connectors::frame_pusher::connect(o.to, *keys);
  if (!push) {
    std::fprintf(stderr, "error: %s\n", push.err().message.c_str());
    return 2;
  }
  std::optional<connectors::patch_shipper> shipper;
  if (o.ship_patches) {
    connectors::patch_shipper_config pc;
    pc.image_size = o.image_size;
    pc.patch_size = o.patch_size;
    pc.pad_to_square = o.pad_to_square;
    pc.keyframe_every = o.keyframe_every;
    pc.gate = graph::default_gate();
    auto s = connectors::patch_shipper::make(pc);
    if (!s) {
      std::fprintf(stderr, "error: --image-size/--patch-size: %s\n", s.err().message.c_str());
      return 2;
    }
    shipper.emplace(std::move(*s));
  }
  std::uint64_t sent = 0, dropped = 0, bytes = 0;
  const auto period = std::chrono::duration<double>(1.0 / fps);
  auto next = std::chrono::steady_clock::now();
  for (auto f = (*reader)->read(); f; f = (*reader)->read()) {
    connectors::wire_frame w;
    w.stream = stream;
    w.seq = f->source_index;  // the source's own frame number: gaps after a restart show as lost
    w.capture_ms = f->capture_ms;
    w.width = static_cast<std::uint32_t>(f->view.width);
    w.height = static_cast<std::uint32_t>(f->view.height);
    if (shipper) {
      if (auto st = shipper->next(f->view, f->source_index, w); !st) {
        std::fprintf(stderr, "error: frame %llu: %s\n", static_cast<unsigned long long>(f->seq), st.err().message.c_str());
        continue;
      }
    } else if (o.raw) {
      w.encoding = connectors::frame_encoding::raw_bgr;
      for (int y = 0; y < f->view.height; ++y)
        w.payload.insert(w.payload.end(), f->view.row(y), f->view.row(y) + f->view.width * 3);
    } else {
      auto jpeg = connectors::encode_jpeg(f->view, o.quality);
      if (!jpeg) {
        std::fprintf(stderr, "error: frame %llu: %s\n", static_cast<unsigned long long>(f->seq), jpeg.err().message.c_str());
        continue;
      }
      w.payload = std::move(*jpeg);
    }
    const auto msg = connectors::encode_wire(w);
    std::this_thread::sleep_until(next);
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    if ((*push)->send(msg)) {
      ++sent;
      bytes += msg.size();
      if (shipper) shipper->sent();
    } else {
      ++dropped;  // no pipeline connected, or its queue is full
      if (shipper) shipper->refused();
    }
  }
  std::printf("camera '%s': %llu frames sent (%.1f KB each), %llu dropped at the sender\n", stream.c_str(),
              static_cast<unsigned long long>(sent), sent ? bytes / 1024.0 / sent : 0.0,
              static_cast<unsigned long long>(dropped));
  if (shipper && sent > 0)
    std::printf("camera '%s': %.1f patches per frame sent of %d\n", stream.c_str(),
                static_cast<double>(shipper->patches_sent()) / static_cast<double>(sent),
                (o.image_size / o.patch_size) * (o.image_size / o.patch_size));
  return 0;
}

}  // namespace vlcache::app
