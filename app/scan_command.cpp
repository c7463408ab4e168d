#include "app/scan_command.hpp"
#include "core/base/elapsed.hpp"
#include "app/json_file.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "connectors/video_reader.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/base/statistics.hpp"
#include "graph/cache_spec.hpp"

namespace vlcache::app {
namespace {



/// One gate configuration evaluated over every stream, with its own references.
struct gate_variant {
  std::string name;
  reference_gate gate;
  std::vector<double> shares;  // per frame after each stream's first
};

std::string describe(const gate_thresholds& g) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
  if (g.ahash) add("ahash<=" + std::to_string(*g.ahash));
  if (g.dhash) add("dhash<=" + std::to_string(*g.dhash));
  if (g.phash) add("phash<=" + std::to_string(*g.phash));
  if (g.mad) {
    char b[32];
    std::snprintf(b, sizeof b, "mad<=%.1f", *g.mad);
    add(b);
    if (g.mad_cell > 1) s += "/cell" + std::to_string(g.mad_cell);
    if (g.noise_factor) {
      std::snprintf(b, sizeof b, ",%.1fx noise", *g.noise_factor);
      s += b;
    }
  }
  return s;
}

std::vector<gate_thresholds> sweep_gates() {
  std::vector<gate_thresholds> out;
  for (int t : {2, 4, 6, 8, 10, 12}) {
    gate_thresholds a, d, p;
    a.ahash = t;
    d.dhash = t;
    p.phash = t;
    out.push_back(a);
    out.push_back(d);
    out.push_back(p);
  }
  for (float t : {2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f}) {
    gate_thresholds m;
    m.mad = t;
    out.push_back(m);
  }
  return out;
}

}  // namespace

void add_scan_command(CLI::App& app, scan_options& o) {
  auto* c = app.add_subcommand("scan", "Signatures and cache decisions over a video, with a hit-rate summary");
  c->add_option("--video", o.video, "Video file, image sequence or URL")->required();
  c->add_option("--config", o.config, "A cache TOML: [input], [gate], [index], [views] only, as configs/scan.toml");
  c->add_option("--fps", o.fps, "Sample the video at this rate (0: every frame)")->default_val(0.0);
  c->add_option("--frames", o.frames, "Frames per stream to scan (0: to the end)")->default_val(0);
  c->add_option("--streams", o.streams, "Streams: the video at several start offsets")->default_val(1)->check(CLI::Range(1, 64));
  c->add_option("--stream-offset", o.stream_offset, "Source frames between stream starts")->default_val(100);
  c->add_flag("--sweep", o.sweep, "Also evaluate each signature alone over a range of thresholds");
  c->add_flag("--quiet", o.quiet, "No per-frame lines");
  c->add_option("--json", o.json, "Write the summary as JSON to this file");
}

int run_scan(const scan_options& o) {
  graph::cache_spec spec;
  if (!o.config.empty()) {
    auto loaded = graph::load_cache_spec(o.config);
    if (!loaded.ok()) {
      for (const auto& e : loaded.errors) std::fprintf(stderr, "error: %s\n", e.c_str());
      return 2;
    }
    spec = loaded.spec;
    if (spec.index || spec.views) {
      std::fprintf(stderr, "error: %s: [%s] is about the encoder's token stores; vlcache scan runs no encoder "
                           "(remove the table)\n", o.config.c_str(), spec.index ? "index" : "views");
      return 2;
    }
  } else {
    spec.preprocess = preprocess_config::clip(224);
    spec.grid = *patch_grid::make(224, 16);
    spec.gate = graph::default_gate();
  }
  auto engine = signature_engine::make(spec.grid, spec.gate.noise_factor.has_value());
  if (!engine) {
    std::fprintf(stderr, "error: %s\n", engine.err().message.c_str());
    return 2;
  }

  std::vector<gate_variant> variants;
  std::vector<gate_thresholds> configs{spec.gate};
  if (o.sweep) for (const auto& g : sweep_gates()) configs.push_back(g);
  for (const auto& g : configs) {
    auto gate = reference_gate::make(spec.grid, g);
    if (!gate) {
      std::fprintf(stderr, "error: %s\n", gate.err().message.c_str());
      return 2;
    }
    variants.push_back({describe(g), std::move(*gate), {}});
  }

  std::vector<std::unique_ptr<connectors::video_reader>> readers;
  for (int s = 0; s < o.streams; ++s) {
    connectors::video_reader_config rc;
    rc.source = o.video;
    rc.sample_fps = o.fps;
    rc.start_frame = static_cast<std::uint64_t>(s) * static_cast<std::uint64_t>(o.stream_offset);
    rc.max_frames = static_cast<std::uint64_t>(o.frames);
    auto r = connectors::video_reader::open(rc);
    if (!r) {
      std::fprintf(stderr, "error: %s\n", r.err().message.c_str());
      return 2;
    }
    readers.push_back(std::move(*r));
  }
  std::printf("scan: %s, %d stream(s), input %d/%d (%d patches), sampling %s, gate %s\n",
              o.video.c_str(), o.streams, spec.grid.image_size, spec.grid.patch_size,
              spec.grid.count(), o.fps > 0 ? (std::to_string(o.fps) + " fps").c_str() : "every frame",
              variants[0].name.c_str());

  std::vector<double> t_pre, t_sig, t_gate;
  std::vector<std::uint64_t> frames_read(o.streams, 0), frames_judged(o.streams, 0);
  std::vector<bool> done(o.streams, false);
  frame_signatures sigs;
  for (bool any = true; any;) {
    any = false;
    for (int s = 0; s < o.streams; ++s) {
      if (done[s]) continue;
      auto f = readers[s]->read();
      if (!f) {
        if (f.err().code != errc::not_found)
          std::fprintf(stderr, "stream %d: %s\n", s, f.err().message.c_str());
        done[s] = true;
        continue;
      }
      any = true;
      ++frames_read[s];
      auto t0 = steady_clock::now();
      auto pre = preprocess(f->view, spec.preprocess);
      if (!pre) {
        std::fprintf(stderr, "stream %d frame %llu: %s\n", s,
                     static_cast<unsigned long long>(f->seq), pre.err().message.c_str());
        continue;
      }
      t_pre.push_back(ms_since(t0));
      const image_view crop = pre->rgb_view();
      t0 = steady_clock::now();
      if (auto st = engine->compute(crop, sigs); !st) {
        std::fprintf(stderr, "stream %d: %s\n", s, st.err().message.c_str());
        continue;
      }
      t_sig.push_back(ms_since(t0));
      for (std::size_t v = 0; v < variants.size(); ++v) {
        t0 = steady_clock::now();
        auto d = variants[v].gate.decide(static_cast<stream_id>(s), sigs);
        if (!d) {
          std::fprintf(stderr, "stream %d: %s\n", s, d.err().message.c_str());
          return 1;
        }
        // Every miss is computed in this scan, so all misses become references.
        auto st = variants[v].gate.commit(static_cast<stream_id>(s), sigs, d->miss_positions, f->seq);
        if (v == 0) t_gate.push_back(ms_since(t0));
        if (!st) return 1;
        if (f->seq > 0) variants[v].shares.push_back(d->miss_share());
        if (v == 0 && !o.quiet)
          std::printf("stream %d frame %4llu t=%7.1fs changed %5.1f%% (%3d/%d)\n", s,
                      static_cast<unsigned long long>(f->seq), f->capture_ms / 1000.0,
                      100.0 * d->miss_share(), d->misses(), spec.grid.count());
      }
      ++frames_judged[s];
    }
  }

  nlohmann::json summary;
  summary["video"] = o.video;
  summary["image_size"] = spec.grid.image_size;
  summary["patch_size"] = spec.grid.patch_size;
  summary["patches_per_frame"] = spec.grid.count();
  summary["sample_fps"] = o.fps;
  std::uint64_t total_read = 0, total_judged = 0;
  for (int s = 0; s < o.streams; ++s) {
    const auto st = variants[0].gate.stats(static_cast<stream_id>(s));
    summary["streams"].push_back({{"stream", s},
                                  {"frames_read", frames_read[s]},
                                  {"frames_judged", frames_judged[s]},
                                  {"hits", st.hits},
                                  {"misses", st.misses},
                                  {"hit_rate", st.hit_rate()},
                                  {"noise_floor", variants[0].gate.noise_floor(static_cast<stream_id>(s))},
                                  {"mad_threshold", variants[0].gate.effective_mad(static_cast<stream_id>(s))},
                                  {"reference_bytes", st.bytes}});
    total_read += frames_read[s];
    total_judged += frames_judged[s];
  }
  summary["frames_read"] = total_read;
  summary["frames_judged"] = total_judged;
  summary["timing_ms"] = {{"preprocess_median", quantile(t_pre, 0.5)},
                          {"signatures_median", quantile(t_sig, 0.5)},
                          {"signatures_p95", quantile(t_sig, 0.95)},
                          {"gate_median", quantile(t_gate, 0.5)}};

  std::printf("\nframes read %llu, judged %llu (shares below exclude each stream's first frame)\n",
              static_cast<unsigned long long>(total_read),
              static_cast<unsigned long long>(total_judged));
  std::printf("%-26s %12s %12s %10s\n", "gate", "mean changed", "p95 changed", "hit rate");
  for (const auto& v : variants) {
    const double m = mean(v.shares), p95 = quantile(v.shares, 0.95);
    std::printf("%-26s %11.2f%% %11.2f%% %9.2f%%\n", v.name.c_str(), 100 * m, 100 * p95,
                100 * (1 - m));
    summary["gates"].push_back({{"gate", v.name}, {"mean_changed", m}, {"p95_changed", p95}});
  }
  std::printf("per frame: preprocess %.3f ms, signatures %.3f ms (p95 %.3f), gate decide+commit %.3f ms (median)\n",
              quantile(t_pre, 0.5), quantile(t_sig, 0.5), quantile(t_sig, 0.95),
              quantile(t_gate, 0.5));
  if (variants[0].gate.thresholds().noise_factor)
    for (int s = 0; s < o.streams; ++s)
      std::printf("stream %d: noise floor sigma %.2f levels, mad threshold %.2f\n", s,
                  variants[0].gate.noise_floor(static_cast<stream_id>(s)),
                  variants[0].gate.effective_mad(static_cast<stream_id>(s)));
  if (total_read != total_judged) {
    std::fprintf(stderr, "error: %llu frames read but %llu judged\n",
                 static_cast<unsigned long long>(total_read),
                 static_cast<unsigned long long>(total_judged));
    return 1;
  }
  if (!write_json_file(o.json, summary)) return 1;
  return 0;
}

}  // namespace vlcache::app
