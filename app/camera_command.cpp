#include "app/camera_command.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>
#include <zmq.hpp>

#include "connectors/frame_decoder.hpp"
#include "connectors/video_reader.hpp"
#include "connectors/wire_format.hpp"
#include "core/patch_signatures.hpp"
#include "core/preprocess.hpp"
#include "core/reference_gate.hpp"
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
}

namespace {

/// The camera's half of patch shipping: its own preprocessing and reference
/// gate (the pipeline's default thresholds); a message the socket refused
/// makes the next one a keyframe.
class patch_shipper {
 public:
  static expected<patch_shipper> make(const camera_options& o) {
    auto grid = patch_grid::make(o.image_size, o.patch_size);
    if (!grid) return grid.err();
    auto engine = signature_engine::make(*grid);
    if (!engine) return engine.err();
    auto gate = reference_gate::make(*grid, graph::default_gate());
    if (!gate) return gate.err();
    return patch_shipper(o, *grid, std::move(*engine), std::move(*gate));
  }

  /// Fills `w` (size, encoding, payload) for this frame.
  status next(const image_view& frame, std::uint64_t index, connectors::wire_frame& w) {
    auto pre = preprocess(frame, preprocess_config::clip(o_.image_size, o_.pad_to_square));
    if (!pre) return pre.err();
    const image_view rgb{pre->rgb.data(), pre->size, pre->size, 3, 1, 0, channel_order::rgb};
    auto sigs = engine_.compute(rgb);
    if (!sigs) return sigs.err();
    keyframe_ = keyframe_ || since_key_ + 1 >= o_.keyframe_every;
    positions_.clear();
    if (keyframe_) {
      for (int p = 0; p < grid_.count(); ++p) positions_.push_back(p);
    } else {
      auto d = gate_.decide(0, *sigs);
      if (!d) return d.err();
      positions_ = d->miss_positions;
    }
    std::vector<std::uint8_t> bgr(pre->rgb.size());
    for (std::size_t i = 0; i < bgr.size(); i += 3) {
      bgr[i] = pre->rgb[i + 2];
      bgr[i + 1] = pre->rgb[i + 1];
      bgr[i + 2] = pre->rgb[i];
    }
    w.encoding = connectors::frame_encoding::patches;
    w.width = w.height = static_cast<std::uint32_t>(pre->size);
    w.payload = connectors::encode_patches(bgr.data(), pre->size, o_.patch_size, positions_, keyframe_, number_++);
    sigs_ = std::move(*sigs);
    index_ = index;
    return {};
  }

  /// The message went out: its patches are the receiver's now.
  void sent() {
    (void)gate_.commit(0, sigs_, positions_, index_);
    since_key_ = keyframe_ ? 0 : since_key_ + 1;
    keyframe_ = false;
    patches_ += positions_.size();
  }
  /// It did not: the receiver will see a gap, so send everything next.
  void refused() { keyframe_ = true; }
  [[nodiscard]] std::uint64_t patches_sent() const noexcept { return patches_; }

 private:
  patch_shipper(const camera_options& o, patch_grid grid, signature_engine engine, reference_gate gate)
      : o_(o), grid_(grid), engine_(std::move(engine)), gate_(std::move(gate)) {}
  camera_options o_;
  patch_grid grid_;
  signature_engine engine_;
  reference_gate gate_;
  frame_signatures sigs_;
  std::vector<int> positions_;
  std::uint64_t index_ = 0, patches_ = 0;
  std::uint32_t number_ = 0;
  int since_key_ = 0;
  bool keyframe_ = true;
};

}  // namespace

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
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  try {
    push.set(zmq::sockopt::sndhwm, 8);
    push.set(zmq::sockopt::linger, 2000);
    push.connect(o.to);
  } catch (const zmq::error_t& e) {
    std::fprintf(stderr, "error: cannot connect to '%s': %s\n", o.to.c_str(), e.what());
    return 2;
  }
  std::optional<patch_shipper> shipper;
  if (o.ship_patches) {
    auto s = patch_shipper::make(o);
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
    if (push.send(zmq::buffer(msg), zmq::send_flags::dontwait)) {
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
