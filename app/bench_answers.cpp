#include "app/bench_answers.hpp"
#include "core/base/elapsed.hpp"
#include "app/json_file.hpp"
#include "app/load_encoder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "connectors/image_file.hpp"
#include "connectors/line_chart.hpp"
#include "connectors/scene_video.hpp"
#include "core/models/answerer.hpp"
#include "core/models/cache_step.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/scenes/scene_questions.hpp"
#include "core/base/statistics.hpp"
#include "graph/cache_spec.hpp"

namespace vlcache::app {
namespace {


struct tally {
  int asked = 0, right_full = 0, right_cached = 0, same = 0;
  std::size_t tokens = 0, tokens_same = 0;
  void add(const scene_question& q, const answer& full, const answer& cached) {
    ++asked;
    right_full += answer_matches(full.text, q.answer);
    right_cached += answer_matches(cached.text, q.answer);
    same += full.ids == cached.ids;
    // Token agreement: the cached answer's tokens equal to the full one's, position by position.
    tokens += full.ids.size();
    for (std::size_t i = 0; i < full.ids.size() && i < cached.ids.size() && full.ids[i] == cached.ids[i]; ++i) ++tokens_same;
  }
  [[nodiscard]] nlohmann::json to_json() const {
    auto share = [this](int n) { return asked ? static_cast<double>(n) / asked : 0.0; };
    return {{"asked", asked},
            {"accuracy_full", share(right_full)},
            {"accuracy_cached", share(right_cached)},
            {"agreement", share(same)},
            {"token_agreement", tokens ? static_cast<double>(tokens_same) / static_cast<double>(tokens) : 0.0}};
  }
};

struct run_result {
  nlohmann::json json;
  std::vector<double> frame, ttft_full, ttft_cached;
};

/// Every scene as one stream: its frames at `stride` through the cache step;
/// on every `every`-th frame the encoder sees, each picked question answered
/// both ways.
run_result run_stride(vision_encoder& enc, answerer& full_llm, answerer& cached_llm, const std::vector<connectors::scene_truth>& scenes,
                      int stride, const bench_answers_options& o, std::ostream* answers) {
  const auto& c = enc.config();
  const auto grid = *patch_grid::make(c.image_size, c.patch_size);
  const auto engine = *signature_engine::make(grid);
  auto step = *cache_step::make(grid, graph::default_gate(), drift_config{});
  tally all;
  std::map<std::string, tally> kinds;
  std::vector<double> ttft_full, ttft_cached, answer_full, answer_cached, encoder_share, image_share;
  // The first question's parts, so the time to first token can be read:
  // encoding from the pixels, the prefill, and the share of prompt rows prefilled.
  std::vector<double> encode_full, encode_cached, prefill_full, prefill_cached, first_rows_share;
  // Keeping the K/V current: each update's time and share of image rows.
  std::vector<double> update_ms, update_share;
  run_result out;
  int answered_frames = 0, encoded_frames = 0;
  for (std::size_t si = 0; si < scenes.size(); ++si) {
    const auto& sc = scenes[si];
    const auto stream = static_cast<stream_id>(si);
    const std::size_t count = o.frames > 0 ? std::min<std::size_t>(o.frames, sc.questions.size()) : sc.questions.size();
    int seen = 0;
    for (std::size_t fi = 0; fi < count; fi += static_cast<std::size_t>(stride), ++seen) {
      char name[48];
      std::snprintf(name, sizeof name, "/frames/%06zu.png", fi);
      auto img = connectors::read_image(sc.folder + name);
      if (!img) throw std::runtime_error(img.err().message);
      // (b) the pipeline's way: preprocess, signatures, gate, plan, sparse encode.
      auto t0 = steady_clock::now();
      auto pre = preprocess(img->view(), preprocess_config::clip(c.image_size));
      if (!pre) throw std::runtime_error(sc.folder + name + ": " + pre.err().message);
      const double pre_ms = ms_since(t0);
      t0 = steady_clock::now();
      auto sigs = engine.compute(pre->rgb_view());
      if (!sigs) throw std::runtime_error(sigs.err().message);
      std::vector<step_plan> plans;
      auto sparse = step.run(enc, {{stream, fi, &*sigs, pre->pixels.data()}}, &plans);
      if (!sparse) throw std::runtime_error(sparse.err().message);
      const double cached_encode_ms = pre_ms + ms_since(t0);
      ++encoded_frames;
      encoder_share.push_back((*sparse)[0].full ? 1.0 : static_cast<double>((*sparse)[0].computed) / grid.count());
      if (seen % o.every != 0) {
        if (o.keep_kv_current) {
          auto r = cached_llm.update_batch({{stream, (*sparse)[0].features}});
          if (!r[0]) throw std::runtime_error(r[0].err().message);
          update_ms.push_back(r[0]->ms);
          update_share.push_back(r[0]->full ? 1.0
                                             : static_cast<double>(r[0]->image_recomputed) / std::max(1, r[0]->image_tokens));
        }
        continue;
      }
      // (a) the full encoder on the same pixels.
      t0 = steady_clock::now();
      auto full = enc.encode_full({pre->pixels.data()});
      if (!full) throw std::runtime_error(full.err().message);
      const double full_encode_ms = pre_ms + ms_since(t0);
      ++answered_frames;
      double frame_ttft_full = 0, frame_ttft_cached = 0;
      const auto asked = pick_questions(sc.questions[fi], fi);
      for (std::size_t qi = 0; qi < asked.size(); ++qi) {
        const auto& q = asked[qi];
        auto a = full_llm.ask(stream, (*full)[0].features, q.question);
        auto b = cached_llm.ask(stream, (*sparse)[0].features, q.question);
        if (!a || !b) throw std::runtime_error((!a ? a.err() : b.err()).message);
        all.add(q, *a, *b);
        kinds[q.kind].add(q, *a, *b);
        if (answers)
          *answers << nlohmann::json{{"scene", sc.folder}, {"frame", fi},       {"stride", stride},
                                     {"kind", q.kind},     {"question", q.question}, {"truth", q.answer},
                                     {"full", a->text},    {"cached", b->text}}
                          .dump()
                   << '\n';
        // Time to the first answer token of the frame: its encoding from the
        // pixels and the prefill of its first question. Later questions about
        // the same frame count their prefill and decoding in the answer time.
        const double ta = (qi == 0 ? full_encode_ms : 0.0) + a->prefill_ms;
        const double tb = (qi == 0 ? cached_encode_ms : 0.0) + b->prefill_ms;
        if (qi == 0) {
          frame_ttft_full = ta;
          frame_ttft_cached = tb;
          encode_full.push_back(full_encode_ms);
          encode_cached.push_back(cached_encode_ms);
          prefill_full.push_back(a->prefill_ms);
          prefill_cached.push_back(b->prefill_ms);
          first_rows_share.push_back(static_cast<double>(b->rows_computed) / std::max(1, b->prompt_tokens));
        }
        answer_full.push_back(ta + a->decode_ms);
        answer_cached.push_back(tb + b->decode_ms);
        image_share.push_back(b->full_prefill ? 1.0 : static_cast<double>(b->image_recomputed) / std::max(1, b->image_tokens));
      }
      ttft_full.push_back(frame_ttft_full);
      ttft_cached.push_back(frame_ttft_cached);
      out.frame.push_back(static_cast<double>(answered_frames));
      out.ttft_full.push_back(frame_ttft_full);
      out.ttft_cached.push_back(frame_ttft_cached);
    }
    step.end_stream(stream, enc);
    full_llm.end_stream(stream);
    cached_llm.end_stream(stream);
  }
  const double full_mean = mean(ttft_full), cached_mean = mean(ttft_cached);
  nlohmann::json per_kind;
  for (const auto& [k, t] : kinds) per_kind[k] = t.to_json();
  out.json = all.to_json();
  out.json.update({{"stride", stride},
                   {"fps", 10.0 / stride},
                   {"scenes", scenes.size()},
                   {"frames_encoded", encoded_frames},
                   {"frames_answered", answered_frames},
                   {"encoder_share_recomputed_mean", mean(encoder_share)},
                   {"prefill_image_share_recomputed_mean", mean(image_share)},
                   {"ttft_full_ms_mean", full_mean},
                   {"ttft_cached_ms_mean", cached_mean},
                   {"ttft_full_ms_median", quantile(ttft_full, 0.5)},
                   {"ttft_cached_ms_median", quantile(ttft_cached, 0.5)},
                   {"ttft_speedup", cached_mean > 0 ? full_mean / cached_mean : 0.0},
                   {"encode_full_ms_mean", mean(encode_full)},
                   {"encode_cached_ms_mean", mean(encode_cached)},
                   {"prefill_full_ms_mean", mean(prefill_full)},
                   {"prefill_cached_ms_mean", mean(prefill_cached)},
                   {"first_prefill_rows_share_mean", mean(first_rows_share)},
                   {"answer_full_ms_mean", mean(answer_full)},
                   {"answer_cached_ms_mean", mean(answer_cached)},
                   {"answer_speedup", mean(answer_cached) > 0 ? mean(answer_full) / mean(answer_cached) : 0.0},
                   {"kv_updates", update_ms.size()},
                   {"kv_update_ms_mean", mean(update_ms)},
                   {"kv_update_image_share_mean", mean(update_share)},
                   // The language model's work per encoded frame, answers and K/V updates together.
                   {"llm_full_ms_per_frame", (sum(answer_full) - sum(encode_full)) / std::max(1, encoded_frames)},
                   {"llm_cached_ms_per_frame", (sum(answer_cached) - sum(encode_cached) + sum(update_ms)) / std::max(1, encoded_frames)},
                   {"per_kind", per_kind}});
  return out;
}

}  // namespace

void add_bench_answers_command(CLI::App& bench, bench_answers_options& o) {
  auto* c = bench.add_subcommand("answers",
                                 "Scenes with known answers answered fully and the cached way: accuracy, agreement, "
                                 "time to first token");
  c->add_option("--model", o.model, "LLaVA snapshot folder")->required();
  c->add_option("--scene", o.scenes, "Folder written by vlcache scene (repeat for several)")->required();
  c->add_option("--strides", o.strides, "Frame strides to run (1 = 10 FPS, 10 = 1 FPS)")->delimiter(',')->default_str("1,10");
  c->add_option("--every", o.every, "Answer every Nth frame the encoder sees")->default_val(10);
  c->add_option("--frames", o.frames, "Frames of each scene read (0: all)")->default_val(0);
  c->add_option("--max-new-tokens", o.max_new_tokens, "Longest answer")->default_val(4);
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
  c->add_option("--store-dtype", o.store_dtype, "Cached path: the token store's keys and values, f32, f16 or i8")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "f16", "i8"}));
  c->add_option("--layer-tolerance", o.layer_tolerance, "Cached path: layer-wise recompute tolerance (0: off)")
      ->default_val(0.0)
      ->check(CLI::NonNegativeNumber);
  c->add_option("--attention-tolerance", o.attention_tolerance,
                "Cached path: layer-wise recompute's attention-output test, as [encoder] attention_tolerance")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--change-tolerance", o.change_tolerance,
                "Cached path: relative change of a visual token that its KV is recomputed for, as [llm] "
                "change_tolerance (default: the pipeline's)")
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--keep-kv-current", o.keep_kv_current,
              "Cached path: frames between answers update the image K/V, as [llm] keep_kv_current");
  c->add_option("--json", o.json, "Write the figures as JSON");
  c->add_option("--plot", o.plot, "Time to first token per answered frame, both ways (PNG)");
  c->add_option("--answers", o.answers, "Write every question asked, its truth and both answers (JSON lines)");
}

int run_bench_answers(const bench_answers_options& o) {
  auto read = connectors::read_scenes(o.scenes);
  if (!read) {
    std::fprintf(stderr, "error: %s\n", read.err().message.c_str());
    return 2;
  }
  const auto& scenes = *read;
  if (o.every < 1) {
    std::fprintf(stderr, "error: --every must be at least 1\n");
    return 2;
  }
  auto enc = load_encoder_or_report(o.model, "cpu", "f32", o.threads, o.layer_tolerance, o.store_dtype, "f32",
                                    o.attention_tolerance);
  if (!enc) return 2;
  llm_options lo;
  lo.threads = o.threads;
  answer_options full_opts, cached_opts;  // the pipeline's defaults, greedy
  full_opts.sampling.max_new_tokens = cached_opts.sampling.max_new_tokens = o.max_new_tokens;
  full_opts.reuse.enabled = false;
  if (o.change_tolerance >= 0) cached_opts.reuse.change_tolerance = o.change_tolerance;
  auto full_llm = answerer::load(o.model, "", lo, full_opts);
  auto cached_llm = answerer::load(o.model, "", lo, cached_opts);
  if (!full_llm || !cached_llm) {
    std::fprintf(stderr, "error: %s\n", (!full_llm ? full_llm.err() : cached_llm.err()).message.c_str());
    return 2;
  }
  if ((*full_llm)->model().random_weights())
    std::fprintf(stderr, "NOTICE: random weights: the answers mean nothing; give a trained snapshot\n");
  nlohmann::json j{{"model", o.model},
                   {"every", o.every},
                   {"layer_tolerance", o.layer_tolerance},
                   {"attention_tolerance", enc->attention_tolerance()},
                   {"change_tolerance", cached_opts.reuse.change_tolerance},
                   {"keep_kv_current", o.keep_kv_current},
                   {"runs", nlohmann::json::array()}};
  std::ofstream answers;
  if (!o.answers.empty()) {
    answers.open(o.answers);
    if (!answers) {
      std::fprintf(stderr, "error: --answers: cannot write '%s'\n", o.answers.c_str());
      return 2;
    }
  }
  connectors::chart_spec chart;
  chart.title = "vlcache bench answers: time to first token per answered frame";
  chart.x_label = "answered frame";
  std::printf("%6s %7s %7s %9s %9s %9s %9s %10s %10s %8s %8s\n", "fps", "frames", "asked", "acc full", "acc cache",
              "agree", "tok agree", "ttft full", "ttft cache", "speedup", "enc %");
  try {
    for (int stride : o.strides) {
      if (stride < 1) throw std::runtime_error("--strides: " + std::to_string(stride) + " is not a stride");
      auto r = run_stride(*enc, **full_llm, **cached_llm, scenes, stride, o, answers.is_open() ? &answers : nullptr);
      const auto& x = r.json;
      std::printf("%6.1f %7d %7d %9.4f %9.4f %9.4f %9.4f %8.2fms %8.2fms %7.2fx %7.1f%%\n", x["fps"].get<double>(),
                  x["frames_answered"].get<int>(), x["asked"].get<int>(), x["accuracy_full"].get<double>(),
                  x["accuracy_cached"].get<double>(), x["agreement"].get<double>(), x["token_agreement"].get<double>(),
                  x["ttft_full_ms_mean"].get<double>(), x["ttft_cached_ms_mean"].get<double>(),
                  x["ttft_speedup"].get<double>(), 100 * x["encoder_share_recomputed_mean"].get<double>());
      std::printf("       first token: encode %.2f ms full, %.2f ms cached; prefill %.2f ms full, %.2f ms cached "
                  "(%.1f %% of the prompt's rows)\n",
                  x["encode_full_ms_mean"].get<double>(), x["encode_cached_ms_mean"].get<double>(),
                  x["prefill_full_ms_mean"].get<double>(), x["prefill_cached_ms_mean"].get<double>(),
                  100 * x["first_prefill_rows_share_mean"].get<double>());
      std::printf("       language model per frame: %.2f ms full, %.2f ms cached", x["llm_full_ms_per_frame"].get<double>(),
                  x["llm_cached_ms_per_frame"].get<double>());
      if (o.keep_kv_current)
        std::printf(" (%d K/V updates between answers, %.2f ms and %.1f %% of the image rows each)",
                    x["kv_updates"].get<int>(), x["kv_update_ms_mean"].get<double>(),
                    100 * x["kv_update_image_share_mean"].get<double>());
      std::printf("\n");
      for (const auto& [kind, k] : x["per_kind"].items())
        std::printf("       %-12s asked %5d  full %.4f  cached %.4f  agreement %.4f\n", kind.c_str(), k["asked"].get<int>(),
                    k["accuracy_full"].get<double>(), k["accuracy_cached"].get<double>(), k["agreement"].get<double>());
      j["runs"].push_back(x);
      const std::string fps = std::to_string(10 / stride) + " FPS";
      chart.panels.push_back({"ms, " + fps,
                              {{"full", {200, 60, 60}, r.frame, r.ttft_full, false},
                               {"cached", {40, 110, 200}, r.frame, r.ttft_cached, false}},
                              true});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (!o.plot.empty()) {
    if (auto st = connectors::write_chart_png(o.plot, chart); !st) {
      std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
      return 1;
    }
  }
  if (answers.is_open() && !answers.flush()) {
    std::fprintf(stderr, "error: --answers: writing '%s' failed\n", o.answers.c_str());
    return 1;
  }
  return write_json_file(o.json, j) ? 0 : 1;
}

}  // namespace vlcache::app
