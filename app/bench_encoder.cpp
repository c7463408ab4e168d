#include "app/bench_encoder.hpp"
#include "core/base/elapsed.hpp"
#include "app/json_file.hpp"
#include "app/load_encoder.hpp"
#include "app/stream_frames.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <nlohmann/json.hpp>

#include "connectors/line_chart.hpp"
#include "connectors/video_reader.hpp"
#include "core/models/cache_step.hpp"
#include "core/cache/drift_policy.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/cache/shadow_check.hpp"
#include "core/base/statistics.hpp"
#include "core/models/vision_encoder.hpp"
#include "graph/cache_spec.hpp"
#include "graph/fidelity_profile.hpp"
#include "graph/pipeline_spec.hpp"
#include "core/cache/fidelity_controller.hpp"

namespace vlcache::app {
namespace {


/// The BLAS library this process actually mapped (not what was asked for).
std::string blas_in_use() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto at = line.find('/');
    if (at == std::string::npos) continue;
    const std::string path = line.substr(at);
    if (path.find("libblas") != std::string::npos || path.find("openblas") != std::string::npos ||
        path.find("libmkl") != std::string::npos)
      return path;
  }
  return "unknown";
}

struct fidelity {
  std::vector<double> cosines;  // per token, frames after the first
  std::vector<double> cos_recomputed, cos_reused;  // the same, split by what the frame did
  double err2 = 0, naive2 = 0, max_rel = 0;

  void add(const float* sparse, const float* full, const float* prev_full, std::int64_t tokens,
           std::int64_t dim, const std::vector<int>& recomputed) {
    std::vector<bool> fresh(static_cast<std::size_t>(tokens), false);
    for (int p : recomputed)
      if (p < tokens) fresh[p] = true;
    double frame_max = 0, full_max = 0;
    for (std::int64_t t = 0; t < tokens; ++t) {
      const float* a = sparse + t * dim;
      const float* b = full + t * dim;
      for (std::int64_t i = 0; i < dim; ++i) {
        const double e = a[i] - b[i], n = b[i] - prev_full[t * dim + i];
        err2 += e * e;
        naive2 += n * n;
        frame_max = std::max(frame_max, std::fabs(e));
        full_max = std::max(full_max, std::fabs(double(b[i])));
      }
      const double cos = token_cosine(a, b, dim);
      cosines.push_back(cos);
      (fresh[t] ? cos_recomputed : cos_reused).push_back(cos);
    }
    max_rel = std::max(max_rel, frame_max / std::max(full_max, 1e-30));
  }
};

/// The fidelity controller as a pipeline runs it: shadow checks every
/// `shadow.every` frames within `shadow.max_share` of the encoder's time
/// feed it, and their time is charged to the sparse path.
struct control_loop {
  controller_config config;
  shadow_config shadow;
};

nlohmann::json run_one(vision_encoder& enc, const std::vector<stream_frames>& data,
                       const gate_thresholds& gate_cfg, const drift_config& drift_cfg, const std::string& model,
                       const view_memory_config& views = {}, const control_loop* loop = nullptr) {
  const auto& c = enc.config();
  const auto grid = *patch_grid::make(c.image_size, c.patch_size);
  const int s_count = static_cast<int>(data.size());
  auto made = cache_step::make(grid, gate_cfg, drift_cfg, views);
  if (!made) throw std::runtime_error(made.err().message);
  auto step = std::move(*made);
  for (int s = 0; s < s_count; ++s) enc.end_stream(static_cast<stream_id>(s));

  std::vector<double> full_ms, sparse_ms, gate_ms, shares, layer_shares;
  fidelity fid;
  std::vector<std::vector<float>> prev_full(s_count);
  std::uint64_t peak_store = 0;
  int full_frames = 0;
  const std::size_t frames = data[0].pixels.size();
  const std::int64_t tokens = c.output_tokens(), dim = c.output_dim();

  nlohmann::json per_frame;  // frames after the first: the plot's series
  std::optional<fidelity_controller> ctl;
  if (loop) ctl = *fidelity_controller::make(loop->config);
  double check_s = 0, encode_s = 0;
  std::vector<std::vector<float>> last_cached(static_cast<std::size_t>(s_count));  // the naive error's tokens
  std::vector<std::uint64_t> since_check(static_cast<std::size_t>(s_count), 0);
  std::uint64_t checks = 0;
  for (std::size_t f = 0; f < frames; ++f) {
    // Full recompute of the S frames, batched: the baseline at its best.
    std::vector<const float*> px;
    for (int s = 0; s < s_count; ++s) px.push_back(data[s].pixels[f].data());
    auto t0 = steady_clock::now();
    auto full = enc.encode_full(px);
    const double full_t = ms_since(t0);
    if (!full) throw std::runtime_error(full.err().message);

    // Sparse: the pipeline's cache step, every stream's frame in one batch.
    t0 = steady_clock::now();
    std::vector<step_frame> batch;
    for (int s = 0; s < s_count; ++s)
      batch.push_back({static_cast<stream_id>(s), f, &data[s].sigs[f], px[s],
                       ctl ? ctl->tolerance(static_cast<stream_id>(s)) : 0.0});
    auto steps = step.plan(batch);
    if (!steps) throw std::runtime_error(steps.err().message);
    const double gate_t = ms_since(t0);
    t0 = steady_clock::now();
    auto sparse = step.encode(enc, batch, *steps);
    double sparse_t = ms_since(t0);
    if (!sparse) throw std::runtime_error(sparse.err().message);
    encode_s += sparse_t / 1000;
    if (ctl) {
      // The frames the pipeline would check: their full forward (computed
      // above for the measurement) feeds the controller and is charged.
      // As the encoder actor schedules them: `every` frames since a stream's
      // last check, while the checks stay within their share.
      for (int s = 0; s < s_count; ++s) {
        auto& since = since_check[static_cast<std::size_t>(s)];
        const auto& prev = last_cached[static_cast<std::size_t>(s)];
        if (f > 0 && ++since >= static_cast<std::uint64_t>(loop->shadow.every) &&
            check_s <= loop->shadow.max_share * encode_s) {
          const auto fv = (*full)[s].features.to_vector();
          ctl->observe(static_cast<stream_id>(s), measure_check((*sparse)[s].features.data(), fv.data(),
                                                                prev.empty() ? nullptr : prev.data(), tokens, dim));
          check_s += full_t / s_count / 1000;
          sparse_t += full_t / s_count;
          ++checks;
          since = 0;
        }
      }
      for (int s = 0; s < s_count; ++s) last_cached[static_cast<std::size_t>(s)] = (*sparse)[s].features.to_vector();
    }
    std::vector<compute_plan> plans;
    for (int s = 0; s < s_count; ++s) {
      plans.push_back((*steps)[s].plan);
      peak_store = std::max(peak_store, enc.store_bytes(static_cast<stream_id>(s)));
    }
    double sign_t = 0;
    for (int s = 0; s < s_count; ++s) sign_t += data[s].sign_ms[f];
    gate_ms.push_back((gate_t + sign_t) / s_count);
    if (f == 0) {
      for (int s = 0; s < s_count; ++s) prev_full[s] = (*full)[s].features.to_vector();
      continue;  // both paths run in full on a stream's first frame
    }
    bool any_full = false;
    const std::size_t cos_before = fid.cosines.size(), shares_before = shares.size();
    for (int s = 0; s < s_count; ++s) {
      const auto& r = (*sparse)[s];
      any_full |= r.full;
      shares.push_back(r.full ? 1.0 : static_cast<double>(r.computed) / grid.count());
      layer_shares.push_back(r.full ? 1.0
                                    : static_cast<double>(r.layer_tokens) /
                                          (static_cast<double>(grid.count()) * c.layers_used()));
      const auto fv = (*full)[s].features.to_vector();
      fid.add(r.features.data(), fv.data(), prev_full[s].data(), tokens, dim, plans[s].positions);
      prev_full[s] = fv;
    }
    full_frames += any_full;
    full_ms.push_back(full_t / s_count);
    sparse_ms.push_back(sparse_t / s_count);
    per_frame["frame"].push_back(f);
    per_frame["share"].push_back(mean(std::vector<double>(shares.begin() + shares_before, shares.end())));
    per_frame["layer_share"].push_back(
        mean(std::vector<double>(layer_shares.begin() + static_cast<std::ptrdiff_t>(shares_before), layer_shares.end())));
    per_frame["cosine_p1"].push_back(
        quantile(std::vector<double>(fid.cosines.begin() + static_cast<std::ptrdiff_t>(cos_before), fid.cosines.end()), 0.01));
    if (ctl) per_frame["layer_tolerance"].push_back(ctl->tolerance(0));
    per_frame["cosine_mean"].push_back(mean(std::vector<double>(fid.cosines.begin() + cos_before, fid.cosines.end())));
    per_frame["full_ms"].push_back(full_t / s_count);
    per_frame["sparse_ms"].push_back(sparse_t / s_count);
  }
  const double full_med = quantile(full_ms, 0.5), sparse_med = quantile(sparse_ms, 0.5);
  const double share = mean(shares);
  const double speedup = sparse_med > 0 ? full_med / sparse_med : 0;
  std::vector<double> cos = fid.cosines;
  nlohmann::json j{{"model", model},
                   {"random_weights", enc.random_weights()},
                   {"frames", frames},
                   {"streams", s_count},
                   {"tokens_per_frame", grid.count()},
                   {"share_recomputed_mean", share},
                   {"share_recomputed_p95", quantile(shares, 0.95)},
                   {"layer_tolerance", enc.layer_tolerance()},
                   {"attention_tolerance", enc.attention_tolerance()},
                   {"share_layer_mean", mean(layer_shares)},
                   {"frames_with_full_refresh", full_frames},
                   {"full_ms_per_frame_median", full_med},
                   {"sparse_ms_per_frame_median", sparse_med},
                   {"sparse_ms_per_frame_mean", mean(sparse_ms)},
                   {"signatures_and_gate_ms_per_frame_median", quantile(gate_ms, 0.5)},
                   {"speedup", speedup},
                   {"efficiency", speedup * share},
                   {"cosine_mean", mean(cos)},
                   {"cosine_p1", quantile(cos, 0.01)},
                   {"cosine_recomputed_p1", quantile(fid.cos_recomputed, 0.01)},
                   {"cosine_reused_p1", quantile(fid.cos_reused, 0.01)},
                   {"cosine_reused_min", quantile(fid.cos_reused, 0.0)},
                   {"err_over_naive", fid.naive2 > 0 ? std::sqrt(fid.err2 / fid.naive2) : 0.0},
                   {"max_relative_error", fid.max_rel},
                   {"peak_store_bytes_per_stream", peak_store},
                   {"view_memory", {{"max_views", views.max_views},
                                    {"cuts", step.views(0) ? step.views(0)->cuts() : 0},
                                    {"restored", step.views(0) ? step.views(0)->restored() : 0}}},
                   {"threads", enc.threads()},
                   {"controller", ctl ? nlohmann::json{{"checks", checks},
                                                        {"check_share", encode_s > 0 ? check_s / encode_s : 0.0},
                                                        {"final_tolerance", ctl->tolerance(0)},
                                                        {"err_over_naive", ctl->report(0).err_over_naive},
                                                        {"moves", ctl->report(0).tighter + ctl->report(0).looser}}
                                      : nlohmann::json(nullptr)},
                   {"blas", blas_in_use()},
                   {"per_frame", per_frame}};
  return j;
}

/// The per-frame figure, and with a sweep the threshold figure beside it.
status plot_encoder_bench(const nlohmann::json& out, const std::string& path) {
  const std::array<std::array<int, 3>, 4> colours{{{200, 50, 50}, {40, 90, 200}, {30, 150, 60}, {150, 80, 180}}};
  connectors::chart_spec c;
  c.title = "vlcache bench encoder: " + out["runs"][0]["model"].get<std::string>() + " on " +
            std::filesystem::path(out["video"].get<std::string>()).filename().string() +
            (out["runs"][0]["random_weights"].get<bool>() ? " (random weights)" : "");
  c.x_label = "frame";
  connectors::chart_panel share{"tokens recomputed (%)", {}, true}, time{"encoder time per frame (ms)", {}, true},
      fid{"cosine to full recompute (mean per frame)", {}, false};
  std::size_t k = 0;
  for (const auto& run : out["runs"]) {
    const auto& pf = run["per_frame"];
    const std::string tag = std::to_string(run["streams"].get<int>()) + (run["streams"] == 1 ? " stream" : " streams");
    std::vector<double> x = pf["frame"].get<std::vector<double>>(), s = pf["share"].get<std::vector<double>>();
    for (auto& v : s) v *= 100;
    share.series.push_back({tag, colours[k % 4], x, s, false});
    time.series.push_back({"full, " + tag, colours[(k * 2) % 4], x, pf["full_ms"].get<std::vector<double>>(), false});
    time.series.push_back({"sparse, " + tag, colours[(k * 2 + 1) % 4], x, pf["sparse_ms"].get<std::vector<double>>(), false});
    fid.series.push_back({tag, colours[k % 4], x, pf["cosine_mean"].get<std::vector<double>>(), false});
    ++k;
  }
  c.panels = {share, time, fid};
  if (auto st = connectors::write_chart_png(path, c); !st) return st;
  if (!out.contains("sweep")) return {};
  connectors::chart_spec sw;
  sw.title = "vlcache bench encoder: speedup and fidelity against the MAD threshold (1 stream)";
  sw.x_label = "gate threshold: mean absolute difference <=";
  std::vector<double> x, speed, cos, p1, share_pct;
  for (const auto& r : out["sweep"]) {
    x.push_back(r["mad"]);
    speed.push_back(r["speedup"]);
    cos.push_back(r["cosine_mean"]);
    p1.push_back(r["cosine_p1"]);
    share_pct.push_back(100 * r["share_recomputed_mean"].get<double>());
  }
  sw.panels = {{"speedup over full recompute (x)", {{"speedup", colours[0], x, speed, true}}, true},
               {"tokens recomputed (%)", {{"share", colours[2], x, share_pct, true}}, true},
               {"cosine to full recompute", {{"mean", colours[1], x, cos, true}, {"p1", colours[3], x, p1, true}}, false}};
  auto stem = std::filesystem::path(path);
  const std::string sweep_path = (stem.parent_path() / (stem.stem().string() + "_sweep" + stem.extension().string())).string();
  return connectors::write_chart_png(sweep_path, sw);
}

}  // namespace

void add_bench_encoder_command(CLI::App& bench, bench_encoder_options& o) {
  auto* c = bench.add_subcommand("encoder", "Full vs sparse recompute over a real video, 1 and N streams");
  c->add_option("--model", o.model, "Preset or Hugging Face folder")->default_val(o.model);
  c->add_option("--video", o.video, "Video file")->default_val(o.video);
  c->add_option("--config", o.config,
                "A cache TOML: [gate], [input], [index], [views] only, as configs/scan.toml (default: mad<=3)");
  c->add_option("--frames", o.frames, "Frames per stream")->default_val(o.frames)->check(CLI::Range(2, 100000));
  c->add_option("--stride", o.stride, "Use every stride-th frame of the video (10 = 1 FPS on vtest)")->default_val(1)->check(CLI::Range(1, 1000));
  c->add_option("--streams", o.streams, "Streams for the batched run (1: single run only)")->default_val(o.streams)->check(CLI::Range(1, 64));
  c->add_option("--stream-offset", o.stream_offset, "Source frames between stream starts")->default_val(o.stream_offset);
  c->add_option("--start", o.start, "First source frame of stream 0")->default_val(0);
  c->add_option("--refresh-interval", o.refresh_interval, "Drift: full refresh every N frames (0: never)")->default_val(0);
  c->add_option("--max-token-age", o.max_token_age, "Drift: recompute tokens older than N frames (0: never)")->default_val(0);
  c->add_option("--drift-budget", o.drift_budget, "Drift: recompute a token once this share of the frame changed since (0: off)")->default_val(0.0);
  c->add_option("--top-r", o.top_r, "Drift: at most R tokens per frame (0: no limit)")->default_val(0);
  c->add_option("--layer-tolerance", o.layer_tolerance,
                 "Layer-wise recompute: a reused token rejoins at a layer once its input or its attention "
                 "output moved by this share of its norm (0: off)")
      ->default_val(0.0)
      ->check(CLI::NonNegativeNumber);
  c->add_option("--attention-tolerance", o.attention_tolerance,
                "Layer-wise recompute's attention-output test on its own tolerance (default: the layer "
                "tolerance; 0: not tested, no attention state kept); also for --sweep-tolerance")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--store-dtype", o.store_dtype, "Keys and values of the token store: f32, f16 or i8 (CPU)")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "f16", "i8"}));
  c->add_option("--weight-dtype", o.weight_dtype,
                "The layers' weights in the CPU kernels: f32, or f16 (half the bytes to stream; the run "
                "also reports how far f16 weights move the full forward from f32)")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "f16"}));
  c->add_option("--sweep-tolerance", o.sweep_tolerance,
                "Also run one stream at each layer tolerance (e.g. 0,0.05,0.1,0.2), same gate")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--defaults", o.defaults,
              "Run what a pipeline with this model and no tuning keys runs: its profile (or the built-in "
              "ladder), gate and the fidelity controller fed by shadow checks, their time charged to the "
              "sparse path (the tuning options above are ignored)");
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
  c->add_option("--device", o.device, "cpu or cuda[:N]")->default_val("cpu");
  c->add_option("--dtype", o.dtype, "f32, f16, bf16")->default_val("f32");
  c->add_option("--json", o.json, "Write the results as JSON");
  c->add_option("--plot", o.plot, "Write a PNG: per-frame share recomputed, time, fidelity (and FILE_sweep.png)");
  c->add_option("--sweep-mad", o.sweep_mad, "Also run one stream at each MAD threshold (e.g. 1,2,3,4,6,8)")
      ->delimiter(',');
  c->add_option("--view-memory", o.view_memory,
                "Also run one stream with view memory keeping N views a stream (0: not)")
      ->default_val(0)
      ->check(CLI::Range(0, 64));
  c->add_option("--view-cut", o.view_cut, "View memory: a frame missing this share of positions leaves the view")
      ->default_val(0.5)
      ->check(CLI::Range(0.01, 1.0));
  c->add_option("--view-match", o.view_match, "View memory: a kept view the frame hits on this share is restored")
      ->default_val(0.5)
      ->check(CLI::Range(0.01, 1.0));
}

/// What a pipeline with this model and no tuning keys runs: its gate,
/// encoder options, and the controller with its checks.
expected<graph::pipeline_spec> defaults_of(const bench_encoder_options& o) {
  auto shape = graph::shape_of_model(o.model);
  if (!shape) return shape.err();
  std::string toml = "[input]\nimage_size = " + std::to_string(shape->image_size) +
                     "\npatch_size = " + std::to_string(shape->patch_size) + "\n[encoder]\nmodel = \"" + o.model +
                     "\"\n[[camera]]\nsource = \"" + o.video + "\"\n";
  auto r = graph::parse_pipeline(toml, "the pipeline defaults for " + o.model);
  if (!r.ok()) return error{errc::invalid_config, r.errors.front()};
  return r.spec;
}

int run_bench_encoder(const bench_encoder_options& o) {
  std::optional<control_loop> loop;
  gate_thresholds gate_cfg = graph::default_gate();
  std::unique_ptr<vision_encoder> enc;
  if (o.defaults) {
    auto spec = defaults_of(o);
    if (!spec) {
      std::fprintf(stderr, "error: %s\n", spec.err().message.c_str());
      return 2;
    }
    const auto& eo = spec->encoder.options;
    enc = load_encoder_or_report(o.model, o.device, o.dtype, o.threads, eo.layer_tolerance, eo.store_dtype,
                                 eo.weight_dtype, eo.attention_tolerance);
    gate_cfg = spec->cache.gate;
    if (spec->fidelity_control.controller) loop = control_loop{*spec->fidelity_control.controller, spec->fidelity};
    std::printf("pipeline defaults: %s; target %g; gate mad %g cell %d%s; controller %s\n",
                spec->fidelity_control.profile.empty() ? "no profile (the built-in ladder)"
                                                       : ("profile " + spec->fidelity_control.profile).c_str(),
                spec->fidelity_control.target.cosine, gate_cfg.mad.value_or(0), gate_cfg.mad_cell, gate_cfg.noise_factor ? ", noise-robust" : "",
                loop ? "on" : "off");
  } else {
    enc = load_encoder_or_report(o.model, o.device, o.dtype, o.threads, o.layer_tolerance, o.store_dtype,
                                 o.weight_dtype, o.attention_tolerance);
  }
  if (!enc) return 2;
  if (!o.config.empty()) {
    auto spec = graph::load_cache_spec(o.config);
    if (!spec.ok()) {
      for (const auto& e : spec.errors) std::fprintf(stderr, "error: %s\n", e.c_str());
      return 2;
    }
    gate_cfg = spec.spec.gate;
  }
  drift_config drift_cfg;
  drift_cfg.refresh_interval = o.refresh_interval;
  drift_cfg.max_token_age = o.max_token_age;
  drift_cfg.changed_share_budget = o.drift_budget;
  drift_cfg.max_tokens_per_frame = o.top_r;
  if (auto st = drift_cfg.validate(); !st) {
    std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
    return 2;
  }

  const auto& c = enc->config();
  auto loaded = load_stream_frames(o.video, o.streams, o.start, o.stream_offset, o.frames, o.stride, c.image_size,
                                   c.patch_size, gate_cfg.noise_factor.has_value());
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.err().message.c_str());
    return 2;
  }
  auto& data = *loaded;
  const std::size_t frames = data[0].pixels.size();

  nlohmann::json out;
  out["video"] = o.video;
  out["stride"] = o.stride;
  out["drift"] = {{"refresh_interval", o.refresh_interval}, {"max_token_age", o.max_token_age},
                  {"drift_budget", o.drift_budget}, {"top_r", o.top_r}};
  std::vector<int> counts{1};
  if (o.streams > 1) counts.push_back(o.streams);
  out["layer_tolerance"] = enc->layer_tolerance();
  out["attention_tolerance"] = enc->attention_tolerance();
  out["store_dtype"] = o.store_dtype;
  out["weight_dtype"] = o.weight_dtype;
  out["pipeline_defaults"] = o.defaults;
  if (o.weight_dtype == "f16" && !o.defaults) {
    // What rounding the weights costs, apart from any reuse: the full
    // forward with f16 weights against the same model's with f32 weights.
    auto exact = load_encoder_or_report(o.model, o.device, o.dtype, o.threads);
    if (!exact) return 2;
    std::vector<double> cos;
    const std::size_t checked = std::min<std::size_t>(frames, 8);
    for (std::size_t f = 0; f < checked; ++f) {
      auto a = enc->encode_full({data[0].pixels[f].data()});
      auto b = exact->encode_full({data[0].pixels[f].data()});
      if (!a || !b) {
        std::fprintf(stderr, "error: %s\n", (!a ? a.err() : b.err()).message.c_str());
        return 2;
      }
      const auto x = (*a)[0].features.to_vector(), y = (*b)[0].features.to_vector();
      const std::int64_t dim = c.output_dim();
      for (std::size_t t = 0; t * dim < x.size(); ++t) cos.push_back(token_cosine(&x[t * dim], &y[t * dim], dim));
    }
    const double mean = std::accumulate(cos.begin(), cos.end(), 0.0) / std::max<std::size_t>(1, cos.size());
    out["weight_rounding"] = {{"frames", checked}, {"cosine_mean", mean}, {"cosine_p1", quantile(cos, 0.01)}};
    std::printf("f16 weights: the full forward against f32 weights over %zu frames: cosine mean %.7f, p1 %.7f\n",
                checked, mean, quantile(cos, 0.01));
  }
  std::printf("%-8s %7s %9s %9s %9s %9s %9s %8s %6s %8s %8s %8s %9s\n", "streams", "frames", "share", "p95",
              "by layer", "full ms", "sparse ms", "speedup", "eff", "cos", "cos p1", "err/nv", "sig+gate");
  try {
    for (int n : counts) {
      std::vector<stream_frames> subset(data.begin(), data.begin() + n);
      auto r = run_one(*enc, subset, gate_cfg, drift_cfg, o.model, {}, loop ? &*loop : nullptr);
      std::printf("%-8d %7zu %8.2f%% %8.2f%% %8.2f%% %9.1f %9.1f %7.2fx %6.2f %8.5f %8.5f %8.3f %8.3fms\n", n,
                  frames, 100 * r["share_recomputed_mean"].get<double>(), 100 * r["share_recomputed_p95"].get<double>(),
                  100 * r["share_layer_mean"].get<double>(),
                  r["full_ms_per_frame_median"].get<double>(), r["sparse_ms_per_frame_median"].get<double>(),
                  r["speedup"].get<double>(), r["efficiency"].get<double>(), r["cosine_mean"].get<double>(),
                  r["cosine_p1"].get<double>(), r["err_over_naive"].get<double>(),
                  r["signatures_and_gate_ms_per_frame_median"].get<double>());
      if (loop)
        std::printf("         controller: %llu checks (%.1f%% of the encoder's time, charged above), stream 0 ends at "
                    "layer tolerance %g after %llu moves\n",
                    static_cast<unsigned long long>(r["controller"]["checks"].get<std::uint64_t>()),
                    100 * r["controller"]["check_share"].get<double>(), r["controller"]["final_tolerance"].get<double>(),
                    static_cast<unsigned long long>(r["controller"]["moves"].get<std::uint64_t>()));
      out["runs"].push_back(r);
    }
    if (o.view_memory > 0) {
      // The same stream with view memory: a view left and found again is restored.
      view_memory_config views;
      views.max_views = o.view_memory;
      views.cut_share = o.view_cut;
      views.match_share = o.view_match;
      auto r = run_one(*enc, {data[0]}, gate_cfg, drift_cfg, o.model, views);
      std::printf("%-8s %7zu %8.2f%% %8.2f%% %8.2f%% %9.1f %9.1f %7.2fx %6.2f %8.5f %8.5f %8.3f  (%llu cuts, %llu restored)\n",
                  "1+views", frames, 100 * r["share_recomputed_mean"].get<double>(),
                  100 * r["share_recomputed_p95"].get<double>(), 100 * r["share_layer_mean"].get<double>(),
                  r["full_ms_per_frame_median"].get<double>(), r["sparse_ms_per_frame_median"].get<double>(),
                  r["speedup"].get<double>(), r["efficiency"].get<double>(), r["cosine_mean"].get<double>(),
                  r["cosine_p1"].get<double>(), r["err_over_naive"].get<double>(),
                  static_cast<unsigned long long>(r["view_memory"]["cuts"].get<std::uint64_t>()),
                  static_cast<unsigned long long>(r["view_memory"]["restored"].get<std::uint64_t>()));
      out["view_memory_run"] = r;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (!o.sweep_mad.empty()) {
    std::printf("%-8s %9s %9s %8s %9s %9s %8s\n", "mad <=", "share", "sparse ms", "speedup", "cos", "cos p1", "err/nv");
    try {
      for (double t : o.sweep_mad) {
        gate_thresholds g = gate_cfg;
        g.mad = static_cast<float>(t);
        if (auto st = g.validate(); !st) {
          std::fprintf(stderr, "error: --sweep-mad %g: %s\n", t, st.err().message.c_str());
          return 2;
        }
        std::vector<stream_frames> one(data.begin(), data.begin() + 1);
        auto r = run_one(*enc, one, g, drift_cfg, o.model);
        r.erase("per_frame");
        r["mad"] = t;
        std::printf("%-8g %8.2f%% %9.1f %7.2fx %9.5f %9.5f %8.3f\n", t, 100 * r["share_recomputed_mean"].get<double>(),
                    r["sparse_ms_per_frame_median"].get<double>(), r["speedup"].get<double>(),
                    r["cosine_mean"].get<double>(), r["cosine_p1"].get<double>(), r["err_over_naive"].get<double>());
        out["sweep"].push_back(r);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (!o.sweep_tolerance.empty()) {
    std::printf("%-10s %9s %9s %9s %8s %9s %9s %8s %9s\n", "tolerance", "share", "by layer", "sparse ms", "speedup",
                "cos", "cos p1", "err/nv", "attention");
    try {
      for (double tol : o.sweep_tolerance) {
        // The store's layout depends on the tolerance: one encoder each.
        auto swept = load_encoder_or_report(o.model, o.device, o.dtype, o.threads, tol, o.store_dtype, o.weight_dtype,
                                            tol > 0 ? o.attention_tolerance : -1.0);
        if (!swept) return 2;
        std::vector<stream_frames> one(data.begin(), data.begin() + 1);
        auto r = run_one(*swept, one, gate_cfg, drift_cfg, o.model);
        r.erase("per_frame");
        std::printf("%-10g %8.2f%% %8.2f%% %9.1f %7.2fx %9.5f %9.5f %8.3f %9g\n", tol,
                    100 * r["share_recomputed_mean"].get<double>(), 100 * r["share_layer_mean"].get<double>(),
                    r["sparse_ms_per_frame_median"].get<double>(), r["speedup"].get<double>(),
                    r["cosine_mean"].get<double>(), r["cosine_p1"].get<double>(), r["err_over_naive"].get<double>(),
                    r["attention_tolerance"].get<double>());
        out["sweep_tolerance"].push_back(r);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (!o.plot.empty()) {
    if (auto st = plot_encoder_bench(out, o.plot); !st) {
      std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
      return 1;
    }
  }
  const auto& first = out["runs"][0];
  std::printf("threads %d, BLAS %s, peak token store %.1f MB per stream\n", first["threads"].get<int>(),
              first["blas"].get<std::string>().c_str(),
              first["peak_store_bytes_per_stream"].get<double>() / 1e6);
  if (!write_json_file(o.json, out)) return 1;
  return 0;
}

}  // namespace vlcache::app
