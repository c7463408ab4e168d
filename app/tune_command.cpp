#include "app/tune_command.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>

#include "app/json_file.hpp"
#include "app/load_encoder.hpp"
#include "app/stream_frames.hpp"
#include "connectors/line_chart.hpp"
#include "core/models/cache_step.hpp"
#include "core/base/elapsed.hpp"
#include "core/cache/fidelity_controller.hpp"
#include "core/cache/shadow_check.hpp"
#include "core/base/statistics.hpp"
#include "connectors/image_file.hpp"
#include "connectors/scene_video.hpp"
#include "core/models/answerer.hpp"
#include "core/models/clip_config.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/scenes/scene_questions.hpp"
#include "graph/cache_spec.hpp"
#include "graph/fidelity_profile.hpp"

namespace vlcache::app {
namespace {

/// One clip of footage and its full-recompute reference.
struct clip {
  std::string name;
  stream_frames data;
  std::vector<std::vector<float>> full;  // per frame: the full forward's tokens (f32 weights)
  std::vector<double> full_ms;           // per frame: its time
};

/// A setting that is fixed per model (chosen offline); the ladder's
/// tolerance is what moves per camera.
struct candidate {
  std::string gate_name;
  gate_thresholds gate;
  bool attention = true;
  std::string weight_dtype = "f32", store_dtype = "f32";
  [[nodiscard]] std::string mode() const {
    return std::string(attention ? "attention test" : "input test alone") + ", weights " + weight_dtype + ", store " +
           store_dtype;
  }
};

struct point {
  std::size_t candidate = 0;
  int rung = 0;
  double tolerance = 0, layer_share = 0, cosine = 0, speedup = 0, err_over_naive = 0;
  bool meets = false;
};

/// Runs every clip through the cache step at one tolerance; fidelity against
/// the references, time against their full forwards.
point evaluate(vision_encoder& enc, vision_encoder& reference, const candidate& cand, std::vector<clip>& clips,
               double tolerance, double percentile) {
  const auto& cfg = enc.config();
  const auto grid = *patch_grid::make(cfg.image_size, cfg.patch_size);
  auto step = cache_step::make(grid, cand.gate, drift_config{});
  if (!step) throw std::runtime_error(step.err().message);
  std::vector<float> cosines;
  std::vector<double> sparse_ms, full_ms;
  double layer_tokens = 0, layer_slots = 0, err2 = 0, naive2 = 0;
  for (std::size_t c = 0; c < clips.size(); ++c) {
    const auto stream = static_cast<stream_id>(c);
    enc.end_stream(stream);
    const auto& d = clips[c].data;
    for (std::size_t f = 0; f < d.pixels.size(); ++f) {
      step_frame frame{stream, f, &d.sigs[f], d.pixels[f].data(), tolerance};
      const auto t0 = steady_clock::now();
      auto out = step->run(enc, {frame});
      const double took = ms_since(t0);
      if (!out) throw std::runtime_error(out.err().message);
      if (f == 0) continue;  // a stream's first frame runs in full on both paths
      const auto& r = (*out)[0];
      sparse_ms.push_back(took);
      if (f % 4 == 1) {
        // The baseline timed again beside this run: the machine's speed
        // drifts between runs more than a small model's frame takes.
        const auto t1 = steady_clock::now();
        auto again = reference.encode_full({d.pixels[f].data()});
        if (!again) throw std::runtime_error(again.err().message);
        full_ms.push_back(ms_since(t1));
      }
      layer_tokens += r.full ? grid.count() * cfg.layers_used() : static_cast<double>(r.layer_tokens);
      layer_slots += static_cast<double>(grid.count()) * cfg.layers_used();
      const auto shape = r.features.shape();
      // Naive: the previous frame's full tokens, as `bench encoder` counts it.
      auto m = measure_check(r.features.data(), clips[c].full[f].data(), clips[c].full[f - 1].data(), shape[0],
                             shape[1]);
      cosines.insert(cosines.end(), m.cosines.begin(), m.cosines.end());
      err2 += m.err2;
      naive2 += m.naive2;
    }
    enc.end_stream(stream);
  }
  point p;
  p.tolerance = tolerance;
  p.layer_share = layer_slots > 0 ? layer_tokens / layer_slots : 0;
  p.cosine = low_percentile(cosines, percentile);
  p.err_over_naive = naive2 > 0 ? std::sqrt(err2 / naive2) : 0.0;
  const double sparse = quantile(sparse_ms, 0.5);
  p.speedup = sparse > 0 ? quantile(full_ms, 0.5) / sparse : 0;
  return p;
}

/// Answers asked about the scenes both ways at one setting: the frames
/// through the cache step (the candidate's gate, its encoder at
/// `tolerance`), every 10th frame's questions answered from its cached
/// tokens (K/V reused between a stream's answers) and from the full
/// forward (no reuse). Returns (asked, agreed).
std::pair<int, int> answer_agreement(vision_encoder& enc, vision_encoder& reference, const candidate& cand,
                                     double tolerance, const std::vector<connectors::scene_truth>& scenes, int frames,
                                     answerer& full_llm, answerer& cached_llm) {
  const auto& cfg = enc.config();
  const auto grid = *patch_grid::make(cfg.image_size, cfg.patch_size);
  const auto engine = *signature_engine::make(grid, cand.gate.noise_factor.has_value());
  auto step = cache_step::make(grid, cand.gate, drift_config{});
  if (!step) throw std::runtime_error(step.err().message);
  int asked = 0, agreed = 0;
  for (std::size_t si = 0; si < scenes.size(); ++si) {
    const auto& sc = scenes[si];
    const auto stream = static_cast<stream_id>(si);
    const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(frames), sc.questions.size());
    for (std::size_t fi = 0; fi < count; ++fi) {
      char name[48];
      std::snprintf(name, sizeof name, "/frames/%06zu.png", fi);
      auto img = connectors::read_image(sc.folder + name);
      if (!img) throw std::runtime_error(img.err().message);
      auto pre = preprocess(img->view(), preprocess_config::clip(cfg.image_size));
      if (!pre) throw std::runtime_error(sc.folder + name + ": " + pre.err().message);
      auto sigs = engine.compute(pre->rgb_view());
      if (!sigs) throw std::runtime_error(sigs.err().message);
      auto sparse = step->run(enc, {{stream, fi, &*sigs, pre->pixels.data(), tolerance}});
      if (!sparse) throw std::runtime_error(sparse.err().message);
      if (fi % 10 != 0) continue;
      auto full = reference.encode_full({pre->pixels.data()});
      if (!full) throw std::runtime_error(full.err().message);
      for (const auto& q : pick_questions(sc.questions[fi], fi)) {
        auto a = full_llm.ask(stream, (*full)[0].features, q.question);
        auto b = cached_llm.ask(stream, (*sparse)[0].features, q.question);
        if (!a || !b) throw std::runtime_error((!a ? a.err() : b.err()).message);
        ++asked;
        agreed += a->ids == b->ids;
      }
    }
    step->end_stream(stream, enc);
    full_llm.end_stream(stream);
    cached_llm.end_stream(stream);
  }
  return {asked, agreed};
}

status plot_front(const std::string& path, const std::string& model, const std::vector<candidate>& cands,
                  const std::vector<point>& points, double target) {
  const std::array<std::array<int, 3>, 8> colours{{{200, 50, 50}, {40, 90, 200}, {30, 150, 60}, {150, 80, 180},
                                                    {220, 140, 30}, {60, 170, 170}, {120, 120, 120}, {20, 20, 20}}};
  connectors::chart_spec c;
  c.title = "vlcache tune: " + model + ", speed and fidelity along the ladder (x: layer tolerance)";
  c.x_label = "layer tolerance (cheaper to the right)";
  connectors::chart_panel speed{"speedup (x)", {}, true};
  connectors::chart_panel fid{"cosine at the percentile", {}, false};
  // One series per gate: its fastest mode that met the target (else its
  // first), so the legend stays readable.
  std::map<std::string, std::size_t> shown;
  for (const auto& p : points) {
    const auto& gate = cands[p.candidate].gate_name;
    auto it = shown.find(gate);
    if (it == shown.end()) {
      shown[gate] = p.candidate;
      continue;
    }
    const auto best_of = [&](std::size_t k) {
      double b = -1;
      for (const auto& q : points)
        if (q.candidate == k && q.meets) b = std::max(b, q.speedup);
      return b;
    };
    if (best_of(p.candidate) > best_of(it->second)) it->second = p.candidate;
  }
  double lo = 1e9, hi = 0;
  std::size_t colour = 0;
  for (const auto& [gate, k] : shown) {
    char mad[32];
    std::snprintf(mad, sizeof mad, "mad %g", static_cast<double>(cands[k].gate.mad.value_or(0)));
    const std::string label = std::string(cands[k].gate.noise_factor ? "robust " : "") + mad + " " +
                              (cands[k].attention ? "attn" : "input") + " " + cands[k].weight_dtype;
    connectors::chart_series s{label, colours[colour++ % colours.size()], {}, {}, true};
    connectors::chart_series f = s;
    for (const auto& p : points) {
      if (p.candidate != k) continue;
      s.x.push_back(p.tolerance);
      s.y.push_back(p.speedup);
      f.x.push_back(p.tolerance);
      f.y.push_back(p.cosine);
      lo = std::min(lo, p.tolerance);
      hi = std::max(hi, p.tolerance);
    }
    if (s.x.empty()) continue;
    speed.series.push_back(s);
    fid.series.push_back(f);
  }
  if (hi > 0) fid.series.push_back({"target", {0, 0, 0}, {lo, hi}, {target, target}, false});
  c.panels = {speed, fid};
  return connectors::write_chart_png(path, c);
}

}  // namespace

void add_tune_command(CLI::App& app, tune_options& o) {
  auto* c = app.add_subcommand("tune", "Measure a model on sample footage and write the fidelity profile a pipeline uses");
  c->add_option("--model", o.model, "Preset or Hugging Face folder")->default_val(o.model);
  c->add_option("--video", o.videos, "Sample footage (repeat for several clips)");
  c->add_option("--scene", o.scenes, "A rendered scene folder: its frames join the footage (repeat)");
  c->add_option("--target", o.target, "Token cosine against a full recompute to hold, at --percentile")
      ->default_val(o.target)
      ->check(CLI::Range(1e-6, 1.0));
  c->add_option("--percentile", o.percentile, "The low percentile (in %) the target is held at")
      ->default_val(o.percentile)
      ->check(CLI::Range(0.0, 50.0));
  c->add_option("--max-err-over-naive", o.max_err_over_naive,
                "Also hold the tokens' error under this share of the naive error (the previous frame's "
                "tokens against the full recompute; 0: not held)")
      ->default_val(0.0)
      ->check(CLI::NonNegativeNumber);
  c->add_option("--answer-agreement", o.answer_agreement,
                "With --scene and a model that answers: the share of answers that must agree with a full "
                "recompute at the chosen rung (else the start moves safer)")
      ->default_val(o.answer_agreement)
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--frames", o.frames, "Frames per clip")->default_val(o.frames)->check(CLI::Range(2, 100000));
  c->add_option("--strides", o.strides,
                "Run each clip at these strides (1: every frame; 10: 1 FPS of a 10 FPS video): a camera's rate "
                "changes what a setting costs and keeps")
      ->delimiter(',')
      ->default_str("1,10")
      ->check(CLI::Range(1, 1000));
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
  c->add_option("--out", o.out, "The profile to write (TOML)")->required();
  c->add_option("--plot", o.plot, "Write the front as a PNG");
  c->add_option("--json", o.json, "Write every measured point as JSON");
}

int run_tune(const tune_options& o) {
  if (o.videos.empty() && o.scenes.empty()) {
    std::fprintf(stderr, "error: tune needs footage: --video FILE or --scene FOLDER\n");
    return 2;
  }
  // Scenes are read first: a folder that is not a scene is named before any work.
  auto scenes = connectors::read_scenes(o.scenes);
  if (!scenes) {
    std::fprintf(stderr, "error: %s\n", scenes.err().message.c_str());
    return 2;
  }
  auto shape = graph::shape_of_model(o.model);
  if (!shape) {
    std::fprintf(stderr, "error: %s\n", shape.err().message.c_str());
    return 2;
  }
  const auto ladder = default_ladder();
  // The reference: f32 weights, the full forward.
  auto reference = load_encoder_or_report(o.model, "cpu", "f32", o.threads, ladder.front(), "f32", "f32", -1.0);
  if (!reference) return 2;
  const auto& cfg = reference->config();
  std::vector<clip> clips;
  std::vector<std::tuple<std::string, std::string, int>> sources;  // name, what OpenCV opens, stride
  for (int stride : o.strides) {
    const std::string at = o.strides.size() > 1 ? " every " + std::to_string(stride) : "";
    for (const auto& v : o.videos) sources.emplace_back(std::filesystem::path(v).filename().string() + at, v, stride);
    for (const auto& s : o.scenes)
      sources.emplace_back(std::filesystem::path(s).lexically_normal().filename().string() + at,
                           (std::filesystem::path(s) / "frames" / "%06d.png").string(), stride);
  }
  for (const auto& [name, src, stride] : sources) {
    auto loaded = load_stream_frames(src, 1, 0, 0, o.frames, stride, cfg.image_size, cfg.patch_size, true);
    if (!loaded) {
      std::fprintf(stderr, "error: %s: %s\n", src.c_str(), loaded.err().message.c_str());
      return 2;
    }
    clip c;
    c.name = name;
    c.data = std::move((*loaded)[0]);
    for (const auto& px : c.data.pixels) {
      const auto t0 = steady_clock::now();
      auto full = reference->encode_full({px.data()});
      c.full_ms.push_back(ms_since(t0));
      if (!full) {
        std::fprintf(stderr, "error: %s\n", full.err().message.c_str());
        return 2;
      }
      c.full.push_back((*full)[0].features.to_vector());
    }
    std::fprintf(stderr, "tune: %s: %zu frames, full forward %.1f ms a frame\n", src.c_str(), c.full.size(),
                 quantile(c.full_ms, 0.5));
    clips.push_back(std::move(c));
  }

  std::vector<candidate> cands;
  gate_thresholds wide = graph::default_gate(), wide_robust = graph::noise_robust_gate();
  wide.mad = 8.0f;  // layer-wise recompute sees what a wide gate lets through
  wide_robust.mad = 6.0f;
  for (const auto& [name, gate] : {std::pair<std::string, gate_thresholds>{"plain gate (mad 3)", graph::default_gate()},
                                   {"plain gate (mad 8)", wide},
                                   {"noise-robust gate (mad 2, cell 4, noise x3)", graph::noise_robust_gate()},
                                   {"noise-robust gate (mad 6, cell 4, noise x3)", wide_robust}}) {
    cands.push_back({name, gate, true, "f32", "f32"});
    cands.push_back({name, gate, true, "f16", "f32"});
    // Without the attention test the store may be compact: int8 keeps the
    // tokens of f32 to 4-5 digits of cosine at a quarter of the K/V bytes
    // (docs/design/cache-decision.md, "Compact token stores").
    cands.push_back({name, gate, false, "f32", "i8"});
    cands.push_back({name, gate, false, "f16", "i8"});
  }
  std::printf("%-46s %-42s %9s %9s %9s %8s %8s\n", "gate", "mode", "tolerance", "by layer", "cosine p", "err/nv",
              "speedup");
  std::vector<point> points;
  std::optional<point> best;
  for (std::size_t k = 0; k < cands.size(); ++k) {
    const auto& cand = cands[k];
    auto enc = load_encoder_or_report(o.model, "cpu", "f32", o.threads, ladder.front(), cand.store_dtype,
                                      cand.weight_dtype, cand.attention ? -1.0 : 0.0);
    if (!enc) return 2;
    // Cheapest rung first; the first that meets the target ends the walk,
    // and so does a rung already slower than the best setting found.
    for (std::size_t r = 0; r < ladder.size(); ++r) {
      point p;
      try {
        p = evaluate(*enc, *reference, cand, clips, ladder[r], o.percentile);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
      }
      p.candidate = k;
      p.rung = static_cast<int>(r);
      p.meets = p.cosine >= o.target && (o.max_err_over_naive <= 0 || p.err_over_naive <= o.max_err_over_naive);
      points.push_back(p);
      std::printf("%-46s %-42s %9g %8.1f%% %9.5f %8.3f %7.2fx%s\n", cand.gate_name.c_str(), cand.mode().c_str(),
                  p.tolerance, 100 * p.layer_share, p.cosine, p.err_over_naive, p.speedup,
                  p.meets ? "  meets the target" : "");
      std::fflush(stdout);
      if (p.meets) break;
      if (std::any_of(points.begin(), points.end(),
                      [&](const point& q) { return q.meets && 0.6 * q.speedup > p.speedup; }))
        break;  // safer rungs only cost more
    }
  }
  // The fastest setting that meets the target; among those within 30 % of
  // its speed, the one recomputing the fewest tokens by layer: wall time on
  // a small model is bound by per-call overheads, tokens by layer are the
  // work that grows with streams and model size.
  for (const auto& p : points)
    if (p.meets && (!best || p.speedup > best->speedup)) best = p;
  if (best) {
    const double fastest = best->speedup;
    // Fewer tokens by layer wins; within 2 % of each other, the faster.
    const auto leaner = [](const point& a, const point& b) {
      return a.layer_share < 0.98 * b.layer_share || (a.layer_share <= 1.02 * b.layer_share && a.speedup > b.speedup);
    };
    for (const auto& p : points)
      if (p.meets && p.speedup >= 0.7 * fastest && leaner(p, *best)) best = p;
    // A camera that turns noisy recomputes nearly every patch through the
    // plain gate: the noise-robust one is taken unless the footage shows
    // it costs more than 10 % of the tokens by layer, or 15 % of the speed
    // (runs of the same work differ by about 10 % on two cores).
    if (!cands[best->candidate].gate.noise_factor) {
      const auto chosen = *best;
      std::optional<point> robust;
      for (const auto& p : points)
        if (p.meets && cands[p.candidate].gate.noise_factor && p.speedup >= 0.85 * chosen.speedup &&
            p.layer_share <= 1.1 * chosen.layer_share && (!robust || leaner(p, *robust)))
          robust = p;
      if (robust) best = robust;
    }
  }
  if (!best) {
    std::fprintf(stderr, "error: no setting met the target (cosine %g at p%g%s) on this footage, not even tolerance %g\n",
                 o.target, o.percentile, o.max_err_over_naive > 0 ? ", err/naive bounded" : "", ladder.back());
    return 1;
  }
  // With scenes whose questions have answers, and a model that answers:
  // the answers at the chosen rung must agree with a full recompute, or the
  // start moves safer until they do.
  std::string answers_note;
  if (!o.scenes.empty() && !is_preset_name(o.model)) {
    llm_options lo;
    lo.threads = o.threads;
    answer_options full_opts, cached_opts;  // a pipeline's defaults, greedy
    full_opts.reuse.enabled = false;
    full_opts.sampling.max_new_tokens = cached_opts.sampling.max_new_tokens = 4;
    auto full_llm = answerer::load(o.model, "", lo, full_opts);
    auto cached_llm = answerer::load(o.model, "", lo, cached_opts);
    if (!full_llm || !cached_llm) {
      std::fprintf(stderr, "tune: no answers measured: %s\n", (!full_llm ? full_llm.err() : cached_llm.err()).message.c_str());
    } else {
      const auto& cand = cands[best->candidate];
      auto enc = load_encoder_or_report(o.model, "cpu", "f32", o.threads, ladder.front(), cand.store_dtype,
                                        cand.weight_dtype, cand.attention ? -1.0 : 0.0);
      if (!enc) return 2;
      for (;;) {
        std::pair<int, int> r;
        try {
          r = answer_agreement(*enc, *reference, cand, ladder[static_cast<std::size_t>(best->rung)], *scenes, o.frames,
                               **full_llm, **cached_llm);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "error: %s\n", e.what());
          return 2;
        }
        const double agreement = r.first ? static_cast<double>(r.second) / r.first : 1.0;
        char line[160];
        std::snprintf(line, sizeof line, "%d of %d answers agree with a full recompute (%.1f %%) at tolerance %g",
                      r.second, r.first, 100 * agreement, ladder[static_cast<std::size_t>(best->rung)]);
        std::printf("answers: %s\n", line);
        answers_note = line;
        if (agreement >= o.answer_agreement || best->rung + 1 >= static_cast<int>(ladder.size())) break;
        // Safer by one rung: its token figures, measured now for the record.
        point next;
        try {
          next = evaluate(*enc, *reference, cand, clips, ladder[static_cast<std::size_t>(best->rung) + 1], o.percentile);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "error: %s\n", e.what());
          return 2;
        }
        next.candidate = best->candidate;
        next.rung = best->rung + 1;
        next.meets = true;
        points.push_back(next);
        best = next;
      }
    }
  }
  const auto& won = cands[best->candidate];
  graph::fidelity_profile prof;
  prof.answers = answers_note;
  prof.model = o.model;
  for (const auto& c : clips) prof.made_from += (prof.made_from.empty() ? "" : ", ") + c.name;
  prof.made_from += ": up to " + std::to_string(o.frames) + " frames each";
  prof.shape = *shape;
  prof.target.cosine = o.target;
  prof.target.percentile = o.percentile;
  prof.target.max_err_over_naive = o.max_err_over_naive;
  prof.gate = won.gate;
  prof.attention_test = won.attention;
  prof.weight_dtype = won.weight_dtype;
  prof.store_dtype = won.store_dtype;
  prof.ladder = ladder;
  prof.start = best->rung;
  prof.measured.assign(ladder.size(), graph::rung_measure{});
  for (const auto& p : points)
    if (p.candidate == best->candidate)
      prof.measured[static_cast<std::size_t>(p.rung)] = {p.layer_share, p.cosine, p.speedup, p.err_over_naive};
  {
    std::ofstream f(o.out);
    f << graph::profile_toml(prof);
    if (!f) {
      std::fprintf(stderr, "error: cannot write %s\n", std::filesystem::absolute(o.out).string().c_str());
      return 2;
    }
  }
  std::printf("profile: %s, %s, start at layer tolerance %g (%.1f%% by layer, cosine p%g %.5f, %.2fx) -> %s\n",
              won.gate_name.c_str(), won.mode().c_str(), best->tolerance, 100 * best->layer_share, o.percentile,
              best->cosine, best->speedup, o.out.c_str());
  if (!o.plot.empty())
    if (auto st = plot_front(o.plot, o.model, cands, points, o.target); !st) {
      std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
      return 2;
    }
  if (!o.json.empty()) {
    nlohmann::json j{{"model", o.model}, {"target", o.target}, {"percentile", o.percentile}, {"points", nlohmann::json::array()}};
    for (const auto& p : points)
      j["points"].push_back({{"gate", cands[p.candidate].gate_name}, {"mode", cands[p.candidate].mode()},
                             {"tolerance", p.tolerance}, {"layer_share", p.layer_share}, {"cosine", p.cosine},
                             {"err_over_naive", p.err_over_naive},
                             {"speedup", p.speedup}, {"meets", p.meets}});
    j["chosen"] = {{"gate", won.gate_name}, {"mode", won.mode()}, {"tolerance", best->tolerance},
                   {"speedup", best->speedup}, {"cosine", best->cosine}, {"layer_share", best->layer_share}};
    if (!write_json_file(o.json, j)) return 2;
  }
  return 0;
}

}  // namespace vlcache::app
