#include "app/bench_llm.hpp"
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
#include <numeric>
#include <nlohmann/json.hpp>

#include "connectors/line_chart.hpp"
#include "core/models/answerer.hpp"
#include "core/cache/drift_policy.hpp"
#include "core/models/cache_step.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/base/statistics.hpp"
#include "core/models/vision_encoder.hpp"
#include "graph/cache_spec.hpp"

namespace vlcache::app {
namespace {


/// KL(p || q) of the softmaxes of two logit rows, in nats.
double kl_divergence(const float* p_logits, const float* q_logits, int n) {
  auto log_softmax = [n](const float* l) {
    const double top = *std::max_element(l, l + n);
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(l[i] - top);
    std::vector<double> out(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out[i] = l[i] - top - std::log(sum);
    return out;
  };
  const auto lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (int i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);
}

int argmax(const float* l, int n) { return static_cast<int>(std::max_element(l, l + n) - l); }

/// One pass over the frames with `reuse`: full and reused prefills side by
/// side for every stream, figures as JSON. Throws on a model error.
nlohmann::json run_once(vision_encoder& enc, language_model& lm, const prompt_layout& prompt,
                        const std::vector<stream_frames>& data, const reuse_options& reuse, const bench_llm_options& o,
                        bool verbose) {
  const auto& c = enc.config();
  const int n_streams = static_cast<int>(data.size());
  for (int st = 0; st < n_streams; ++st) enc.end_stream(static_cast<stream_id>(st));
  const std::size_t frame_count = data[0].pixels.size();
  const auto grid = *patch_grid::make(c.image_size, c.patch_size);
  auto step = *cache_step::make(grid, graph::default_gate(), drift_config{});
  std::vector<int> all_positions(prompt.ids.size());
  std::iota(all_positions.begin(), all_positions.end(), 0);
  prefill_cache cache(lm, reuse);
  const int vocab = lm.config().vocab_size;
  sampling_options greedy;
  greedy.max_new_tokens = o.answer_tokens;

  // Per frame index: times per stream (a batch's time over its streams);
  // per stream and frame: shares and agreement.
  std::vector<double> full_ms, reuse_ms, image_share, rows_share, kl, token_agree, encoder_share, frame_index;
  std::vector<double> frame_image_share, frame_encoder_share, frame_kl_max;  // per frame, over the streams
  int top1 = 0, answers_equal = 0, compared = 0, forced_full = 0;
  if (verbose)
    std::printf("%5s %8s %9s %9s %8s %7s %10s %6s %7s   (per stream; %d stream%s batched)\n", "frame", "enc %",
              "full ms", "reuse ms", "speedup", "img %", "KL max", "top1", "answers", n_streams, n_streams > 1 ? "s" : "");
  for (std::size_t f = 0; f < frame_count; ++f) {
    std::vector<step_frame> batch;
    for (int st = 0; st < n_streams; ++st)
      batch.push_back({static_cast<stream_id>(st), f, &data[st].sigs[f], data[st].pixels[f].data()});
    auto enc_out = step.run(enc, batch);
    if (!enc_out) throw std::runtime_error(enc_out.err().message);
    std::vector<tensor_handle> feats;
    for (int st = 0; st < n_streams; ++st) feats.push_back((*enc_out)[st].features);

    // The baseline: every stream's whole prompt, batched as well.
    auto t0 = steady_clock::now();
    std::vector<kv_sequence> full_seqs(static_cast<std::size_t>(n_streams));
    std::vector<kv_sequence*> full_ptrs;
    std::vector<tensor_handle> full_rows;
    std::vector<std::vector<int>> full_pos;
    for (int st = 0; st < n_streams; ++st) {
      auto e = lm.embed(prompt.ids, &feats[st]);
      if (!e) {
        throw std::runtime_error(e.err().message);
      }
      full_ptrs.push_back(&full_seqs[st]);
      full_rows.push_back(*e);
      full_pos.push_back(all_positions);
    }
    auto full = lm.forward_batch(full_ptrs, full_rows, full_pos);
    const double full_t = ms_since(t0);
    std::vector<prefill_cache::request> requests;
    for (int st = 0; st < n_streams; ++st) requests.push_back({static_cast<stream_id>(st), &prompt, &feats[st]});
    auto reused = cache.prefill_batch(requests);
    if (!full) {
      throw std::runtime_error(full.err().message);
    }
    std::vector<kv_sequence*> reuse_ptrs;
    std::vector<tensor_handle> reuse_logits;
    for (int st = 0; st < n_streams; ++st) {
      if (!reused[st]) {
        throw std::runtime_error(reused[st].err().message);
      }
      reuse_ptrs.push_back(cache.sequence(static_cast<stream_id>(st)));
      reuse_logits.push_back(reused[st]->logits);
    }
    auto a_full = lm.generate_batch(full_ptrs, *full, greedy);
    auto a_reuse = lm.generate_batch(reuse_ptrs, reuse_logits, greedy);
    if (!a_full || !a_reuse) {
      throw std::runtime_error((!a_full ? a_full.err() : a_reuse.err()).message);
    }
    if (f == 0) continue;  // both run in full on the first frame
    const double reuse_t = reused[0]->ms;
    double frame_kl = 0, frame_img = 0, frame_enc = 0;
    int frame_top = 0, frame_same = 0;
    for (int st = 0; st < n_streams; ++st) {
      const auto& r = *reused[st];
      if (r.full) ++forced_full;
      const float* lf = (*full)[st].data();
      const float* lr = r.logits.data();
      const double k = kl_divergence(lf, lr, vocab);
      const bool same_top = argmax(lf, vocab) == argmax(lr, vocab);
      const auto& ga = (*a_full)[st].ids;
      const auto& gr = (*a_reuse)[st].ids;
      std::size_t agree = 0;
      while (agree < ga.size() && agree < gr.size() && ga[agree] == gr[agree]) ++agree;
      image_share.push_back(static_cast<double>(r.image_recomputed) / std::max(1, r.image_tokens));
      rows_share.push_back(static_cast<double>(r.rows_computed) / r.prompt_tokens);
      const auto& e = (*enc_out)[st];
      encoder_share.push_back(e.full ? 1.0 : static_cast<double>(e.computed) / grid.count());
      kl.push_back(k);
      token_agree.push_back(static_cast<double>(agree) / static_cast<double>(ga.size()));
      top1 += same_top;
      answers_equal += ga == gr;
      ++compared;
      frame_kl = std::max(frame_kl, k);
      frame_img += image_share.back() / n_streams;
      frame_enc += encoder_share.back() / n_streams;
      frame_top += same_top;
      frame_same += ga == gr;
    }
    frame_index.push_back(static_cast<double>(f));
    frame_image_share.push_back(frame_img);
    frame_encoder_share.push_back(frame_enc);
    frame_kl_max.push_back(frame_kl);
    full_ms.push_back(full_t / n_streams);
    reuse_ms.push_back(reuse_t / n_streams);
    if (verbose)
      std::printf("%5zu %7.1f%% %9.1f %9.1f %7.2fx %6.1f%% %10.3g %4d/%d %5d/%d\n", f, 100 * frame_enc,
                full_ms.back(), reuse_ms.back(), full_t / reuse_t, 100 * frame_img, frame_kl, frame_top, n_streams,
                frame_same, n_streams);
  }
  const double full_med = quantile(full_ms, 0.5), reuse_med = quantile(reuse_ms, 0.5);
  nlohmann::json j{{"model", o.model},
                   {"dtype", o.dtype},
                   {"language_model", lm.description()},
                   {"random_weights", lm.random_weights()},
                   {"video", o.video},
                   {"stride", o.stride},
                   {"streams", n_streams},
                   {"comparisons", compared},
                   {"prompt_tokens", prompt.ids.size()},
                   {"image_tokens", prompt.image_count},
                   {"reuse", {{"recompute_first", reuse.recompute_first},
                              {"recompute_last", reuse.recompute_last},
                              {"recompute_deviation", reuse.recompute_deviation},
                              {"change_tolerance", reuse.change_tolerance},
                              {"full_every", reuse.full_every}}},
                   {"encoder_share_recomputed_mean", mean(encoder_share)},
                   {"image_share_recomputed_mean", mean(image_share)},
                   {"prompt_share_recomputed_mean", mean(rows_share)},
                   {"prefill_full_ms_median", full_med},
                   {"prefill_reuse_ms_median", reuse_med},
                   {"prefill_speedup", reuse_med > 0 ? full_med / reuse_med : 0.0},
                   {"frames_forced_full", forced_full},
                   {"top1_agreement", compared ? static_cast<double>(top1) / compared : 0.0},
                   {"kl_mean", mean(kl)},
                   {"kl_max", quantile(kl, 1.0)},
                   {"answer_tokens", o.answer_tokens},
                   {"answers_identical", compared ? static_cast<double>(answers_equal) / compared : 0.0},
                   {"answer_token_prefix_agreement_mean", mean(token_agree)},
                   {"threads", lm.config().hidden_size > 0 ? enc.threads() : 0}};
  if (verbose) {
  std::printf("prefill: full %.1f ms, reused %.1f ms (median) -> %.2fx; image tokens recomputed %.1f%%, prompt %.1f%%\n",
              full_med, reuse_med, j["prefill_speedup"].get<double>(), 100 * mean(image_share), 100 * mean(rows_share));
  std::printf("vs full prefill: top-1 agreement %.3f, KL mean %.3g max %.3g, identical %d-token answers %.3f\n",
              j["top1_agreement"].get<double>(), mean(kl), j["kl_max"].get<double>(), o.answer_tokens,
              j["answers_identical"].get<double>());
  }
  j["per_frame"] = {{"frame", frame_index}, {"prefill_full_ms", full_ms}, {"prefill_reuse_ms", reuse_ms},
                    {"image_share_recomputed", frame_image_share}, {"encoder_share_recomputed", frame_encoder_share},
                    {"kl_max", frame_kl_max}};
  return j;
}

}  // namespace

void add_bench_llm_command(CLI::App& bench, bench_llm_options& o) {
  auto* c = bench.add_subcommand("llm", "Full vs KV-reused prefill over the visual tokens of a real video");
  c->add_option("--model", o.model, "Preset or Hugging Face LLaVA folder")->default_val(o.model);
  c->add_option("--tokenizer", o.tokenizer, "sentencepiece model (default: the snapshot's tokenizer.model)");
  c->add_option("--video", o.video, "Video file")->default_val(o.video);
  c->add_option("--question", o.question, "The question asked of every frame")->default_val(o.question);
  c->add_option("--template", o.prompt_template, "Prompt template")->default_val(default_prompt_template);
  c->add_option("--frames", o.frames, "Frames")->default_val(o.frames)->check(CLI::Range(2, 100000));
  c->add_option("--stride", o.stride, "Use every stride-th frame (10 = 1 FPS on vtest)")->default_val(1)->check(CLI::Range(1, 1000));
  c->add_option("--start", o.start, "First source frame")->default_val(0);
  c->add_option("--streams", o.streams, "Streams answered together (offsets of one video), batched in both paths")
      ->default_val(1)->check(CLI::Range(1, 64));
  c->add_option("--stream-offset", o.stream_offset, "Source frames between stream starts")->default_val(150);
  c->add_option("--answer-tokens", o.answer_tokens, "Greedy tokens compared per frame")->default_val(o.answer_tokens)->check(CLI::Range(1, 512));
  c->add_option("--recompute-first", o.recompute_first, "Earliest image positions always recomputed")->default_val(o.recompute_first);
  c->add_option("--recompute-last", o.recompute_last, "Latest image positions always recomputed")->default_val(0);
  c->add_option("--recompute-deviation", o.recompute_deviation, "Also the N unchanged tokens that deviate most")->default_val(0);
  c->add_option("--change-tolerance", o.change_tolerance, "Relative L2 change of a visual token that counts as changed")->default_val(0.0);
  c->add_option("--full-every", o.full_every, "Full prefill every N frames (0: never forced)")->default_val(0);
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
  c->add_option("--dtype", o.dtype, "The language model's dtype: f32 or bf16")->default_val("f32");
  c->add_option("--json", o.json, "Write the results as JSON");
  c->add_option("--plot", o.plot, "Write a PNG: prefill time, share recomputed and KL per frame (and PLOT_sweep.png)");
  c->add_option("--sweep-recompute-first", o.sweep_recompute_first,
                "Also run at each number of earliest image positions recomputed (e.g. 0,2,4,8,16)")
      ->delimiter(',');
  c->add_option("--sweep-recompute-last", o.sweep_recompute_last,
                "Also run at each number of latest image positions recomputed (e.g. 0,8,16,32)")
      ->delimiter(',');
}

int run_bench_llm(const bench_llm_options& o) {
  auto enc = load_encoder_or_report(o.model, "cpu", "f32", o.threads);
  if (!enc) return 2;
  llm_options lo;
  lo.threads = o.threads;
  lo.dtype = o.dtype;
  answer_options ao;
  ao.prompt_template = o.prompt_template;
  ao.sampling.max_new_tokens = o.answer_tokens;
  ao.reuse.recompute_first = o.recompute_first;
  ao.reuse.recompute_last = o.recompute_last;
  ao.reuse.recompute_deviation = o.recompute_deviation;
  ao.reuse.change_tolerance = o.change_tolerance;
  ao.reuse.full_every = o.full_every;
  auto loaded = answerer::load(o.model, o.tokenizer, lo, ao);
  if (!loaded) {
    std::fprintf(stderr, "error: %s\n", loaded.err().message.c_str());
    return 2;
  }
  answerer& llm = **loaded;
  language_model& lm = llm.model();
  if (lm.random_weights())
    std::fprintf(stderr, "NOTICE: %s -- RANDOM weights: speed is real, agreement figures only indicate\n",
                 lm.description().c_str());
  const auto& c = enc->config();
  const int n_streams = o.streams;
  auto data = load_stream_frames(o.video, n_streams, o.start, o.stream_offset, o.frames, o.stride, c.image_size,
                                 c.patch_size);
  if (!data) {
    std::fprintf(stderr, "error: %s\n", data.err().message.c_str());
    return 2;
  }
  auto prompt = llm.tokens().build_prompt(o.prompt_template, o.question, lm.config().image_token_index,
                                          c.output_tokens());
  if (!prompt) {
    std::fprintf(stderr, "error: %s\n", prompt.err().message.c_str());
    return 2;
  }
  nlohmann::json j;
  try {
    j = run_once(*enc, lm, *prompt, *data, ao.reuse, o, true);
    // A sweep varies the earliest or the latest positions recomputed, the other as given.
    for (const bool last : {false, true})
      for (int v : last ? o.sweep_recompute_last : o.sweep_recompute_first) {
        reuse_options r = ao.reuse;
        (last ? r.recompute_last : r.recompute_first) = v;
        auto one = run_once(*enc, lm, *prompt, *data, r, o, false);
        one.erase("per_frame");
        one["swept"] = last ? "recompute_last" : "recompute_first";
        std::printf("%s %3d: %.2fx, image tokens recomputed %.1f%%, top-1 %.3f, KL mean %.3g, same answers %.3f\n",
                    last ? "recompute_last " : "recompute_first", v, one["prefill_speedup"].get<double>(),
                    100 * one["image_share_recomputed_mean"].get<double>(), one["top1_agreement"].get<double>(),
                    one["kl_mean"].get<double>(), one["answers_identical"].get<double>());
        j["sweep"].push_back(one);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  const auto& pf = j["per_frame"];
  const auto frame_index = pf["frame"].get<std::vector<double>>(), full_ms = pf["prefill_full_ms"].get<std::vector<double>>(),
             reuse_ms = pf["prefill_reuse_ms"].get<std::vector<double>>(),
             frame_image_share = pf["image_share_recomputed"].get<std::vector<double>>(),
             frame_encoder_share = pf["encoder_share_recomputed"].get<std::vector<double>>(),
             frame_kl_max = pf["kl_max"].get<std::vector<double>>();
  if (!o.plot.empty()) {
    connectors::chart_spec c;
    c.title = "vlcache bench llm: full vs KV-reused prefill, " + o.model + ", " + std::to_string(n_streams) +
              (n_streams > 1 ? " streams batched" : " stream") + (lm.random_weights() ? " (random weights)" : "");
    c.x_label = "frame";
    std::vector<double> img_pct = frame_image_share, enc_pct = frame_encoder_share;
    for (auto& v : img_pct) v *= 100;
    for (auto& v : enc_pct) v *= 100;
    c.panels = {{"prefill time (ms)",
                 {{"full prefill", {200, 50, 50}, frame_index, full_ms, false},
                  {"reused prefill", {40, 90, 200}, frame_index, reuse_ms, false}},
                 true},
                {"recomputed (%)",
                 {{"image tokens in the prefill", {40, 90, 200}, frame_index, img_pct, false},
                  {"patches in the encoder", {30, 150, 60}, frame_index, enc_pct, false}},
                 true},
                {"KL(full || reused) of the next token, largest over the streams (nats)",
                 {{"KL", {150, 80, 180}, frame_index, frame_kl_max, true}},
                 true}};
    if (auto st = connectors::write_chart_png(o.plot, c); !st) {
      std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
      return 1;
    }
    if (j.contains("sweep")) {
      connectors::chart_spec sw;
      sw.title = "vlcache bench llm: speedup and agreement against the image positions always recomputed";
      sw.x_label = "image positions always recomputed (earliest or latest)";
      sw.panels = {{"prefill speedup over a full prefill (x)", {}, true},
                   {"prompt rows computed (%)", {}, true},
                   {"top-1 agreement with the full prefill", {}, false},
                   {"KL mean (nats)", {}, true}};
      for (const std::string kind : {"recompute_first", "recompute_last"}) {
        std::vector<double> x, speed, top, kl_mean, share;
        for (const auto& r : j["sweep"]) {
          if (r["swept"] != kind) continue;
          x.push_back(r["reuse"][kind].get<double>());
          speed.push_back(r["prefill_speedup"]);
          top.push_back(r["top1_agreement"]);
          kl_mean.push_back(r["kl_mean"]);
          share.push_back(100 * r["prompt_share_recomputed_mean"].get<double>());
        }
        if (x.empty()) continue;
        const std::array<int, 3> colour = kind == "recompute_first" ? std::array<int, 3>{200, 50, 50}
                                                                     : std::array<int, 3>{40, 90, 200};
        const std::string name = kind == "recompute_first" ? "earliest" : "latest";
        sw.panels[0].series.push_back({name, colour, x, speed, true});
        sw.panels[1].series.push_back({name, colour, x, share, true});
        sw.panels[2].series.push_back({name, colour, x, top, true});
        sw.panels[3].series.push_back({name, colour, x, kl_mean, true});
      }
      const auto path = std::filesystem::path(o.plot);
      const auto sweep_path =
          (path.parent_path() / (path.stem().string() + "_sweep" + path.extension().string())).string();
      if (auto st = connectors::write_chart_png(sweep_path, sw); !st) {
        std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
        return 1;
      }
    }
  }
  if (!write_json_file(o.json, j)) return 1;
  return 0;
}

}  // namespace vlcache::app
