#include "connectors/curve_keys.hpp"
#include "graph/pipeline_summary.hpp"

#include <algorithm>
#include <cstdio>

namespace vlcache::graph {

namespace {

nlohmann::json fidelity_json(const actors::encoder_counters& enc, stream_id stream) {
  auto it = enc.shadow.find(stream);
  nlohmann::json j{{"checks", 0}};
  if (it != enc.shadow.end()) {
    const auto& c = it->second;
    j = {{"checks", c.checks}, {"cosine_mean", c.cosine_mean()}, {"cosine_min", c.cosine_min},
         {"refreshes", c.refreshes}};
  }
  if (auto k = enc.control.find(stream); k != enc.control.end()) {
    const auto& r = k->second;
    j["control"] = {{"rung", r.rung},           {"layer_tolerance", r.tolerance}, {"cosine_low", r.measured},
                    {"err_over_naive", r.err_over_naive},
                    {"tighter", r.tighter},     {"looser", r.looser},             {"answers_audited", r.answers_audited},
                    {"answers_agreed", r.answers_agreed}, {"answer_agreement", r.agreement}};
  }
  return j;
}

}  // namespace

nlohmann::json summarize(run_facts f) {
  const actors::latency_report& report = f.final.latency;
  const actors::encoder_counters& enc = f.final.encoder;
  auto& finished = f.finished;
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.stream < b.stream; });
  nlohmann::json summary{{"pipeline", f.pipeline}, {"seconds", f.seconds}, {"encoder_remote", f.encoder_remote}};
  if (f.random_weights) summary["random_weights"] = *f.random_weights;
  bool balanced = true;
  std::uint64_t total_read = 0, total_encoded = 0;
  std::printf("\nsummary of '%s' after %.1f s\n", f.pipeline.c_str(), f.seconds);
  // What went wrong comes first: below it the counts would read as success.
  std::uint64_t total_failed = 0;
  for (const auto& c : finished) {
    total_failed += c.failed;
    if (c.read == 0 && !c.error.empty())
      std::printf("  FAILED %s: %s\n", c.name.c_str(), c.error.c_str());
    else if (c.failed > 0)
      std::printf("  FAILED %s: %llu of %llu frames%s\n", c.name.c_str(), static_cast<unsigned long long>(c.failed),
                  static_cast<unsigned long long>(c.read), c.error.empty() ? "" : (": " + c.error).c_str());
    if (!c.balanced()) std::printf("  FAILED %s: frames unaccounted for\n", c.name.c_str());
  }
  for (const auto& c : finished) {
    balanced &= c.balanced();
    total_read += c.read;
    total_encoded += c.encoded;
    std::string notes;
    if (c.lost_in_transit) notes += "; lost in transit " + std::to_string(c.lost_in_transit);
    if (c.outages) {
      char b[96];
      std::snprintf(b, sizeof b, "; %llu outages, %.1f s without frames", static_cast<unsigned long long>(c.outages),
                    c.gap_seconds);
      notes += b;
    }
    if (c.view_cuts)
      notes += "; " + std::to_string(c.view_cuts) + " view cuts, " + std::to_string(c.views_restored) + " restored";
    std::printf("  %-12s read %5llu = encoded %5llu + dropped %llu (oldest) + %llu (newest) + failed %llu%s%s%s\n",
                c.name.c_str(), static_cast<unsigned long long>(c.read), static_cast<unsigned long long>(c.encoded),
                static_cast<unsigned long long>(c.dropped_oldest), static_cast<unsigned long long>(c.dropped_newest),
                static_cast<unsigned long long>(c.failed), c.balanced() ? "" : "  UNACCOUNTED FRAMES", notes.c_str(),
                c.error.empty() ? "" : ("  (" + c.error + ")").c_str());
    const auto ev = enc.evictions.count(c.stream) ? enc.evictions.at(c.stream) : std::pair<std::uint64_t, std::uint64_t>{};
    summary["streams"].push_back({{"name", c.name},
                                  {"frames_read", c.read},
                                  {"frames_encoded", c.encoded},
                                  {"frames_failed", c.failed},
                                  {"dropped", {{"oldest", c.dropped_oldest}, {"newest", c.dropped_newest}}},
                                  {"reopened", c.reopened},
                                  {"lost_in_transit", c.lost_in_transit},
                                  {"outages", c.outages},
                                  {"gap_seconds", c.gap_seconds},
                                  {"tokens_computed_share", enc.share(c.stream)},
                                  {"hit_rate", enc.hit_rate(c.stream)},
                                  {"noise_floor", c.noise_floor},
                                  {"mad_threshold", c.mad_threshold},
                                  {"store_evictions", ev.first},
                                  {"store_refills", ev.second},
                                  {"view_cuts", c.view_cuts},
                                  {"views_restored", c.views_restored},
                                  {"fidelity", fidelity_json(enc, c.stream)},
                                  {"error", c.error}});
  }
  nlohmann::json stages;
  for (const auto& [stage, v] : report.stage_ms) {
    // Quantiles of the most recent frames (a bounded window); counts over the whole run.
    stages[stage] = {{"p50_ms", v.recent_quantile(0.5)}, {"p95_ms", v.recent_quantile(0.95)}, {"count", v.count()}};
    std::printf("  %-10s p50 %8.2f ms  p95 %8.2f ms\n", stage.c_str(), v.recent_quantile(0.5), v.recent_quantile(0.95));
  }
  const double throughput = f.seconds > 0 ? total_encoded / f.seconds : 0.0;
  summary["latency"] = stages;
  summary["frames_read"] = total_read;
  summary["frames_encoded"] = total_encoded;
  summary["throughput_fps"] = throughput;
  summary["out_of_order"] = report.out_of_order;
  if (f.ingest) {
    const auto& in = *f.ingest;
    summary["ingest"] = {{"messages", in.messages},
                         {"streams_opened", in.streams_opened},
                         {"streams_closed", in.streams_closed},
                         {"rejected", in.rejected}};
    std::uint64_t rejected = 0;
    for (const auto& [reason, n] : in.rejected) rejected += n;
    std::printf("  ingest: %llu messages, %llu streams, %llu rejected\n", static_cast<unsigned long long>(in.messages),
                static_cast<unsigned long long>(in.streams_opened), static_cast<unsigned long long>(rejected));
    for (const auto& [reason, n] : in.rejected)
      std::printf("    rejected %llu: %s\n", static_cast<unsigned long long>(n), reason.c_str());
  }
  // Each stage's throughput on its own: frames over the time it was busy.
  // The pipeline overlaps the stages, so its throughput should approach the
  // slowest one's.
  double decode_seconds = 0;
  for (const auto& c : finished) decode_seconds += c.decode_seconds;
  const double decode_fps = decode_seconds > 0 ? total_read / decode_seconds : 0.0;
  const double encoder_fps = enc.busy_seconds > 0 ? enc.frames / enc.busy_seconds : 0.0;
  const double slowest = std::min(decode_fps > 0 ? decode_fps : 1e30, encoder_fps > 0 ? encoder_fps : 1e30);
  summary["stage_throughput_fps"] = {{"decode_preprocess", decode_fps}, {"encoder", encoder_fps}};
  summary["slowest_stage_fps"] = slowest;
  summary["throughput_over_slowest_stage"] = slowest < 1e30 ? throughput / slowest : 0.0;
  const double total_share = enc.share();
  summary["encoder"] = {{"batches", enc.batches}, {"frames", enc.frames}, {"tokens_computed", enc.tokens}};
  if (!f.encoder_remote.empty()) {
    summary["encoder"]["remote_failures"] = enc.remote_failures;
    summary["encoder"]["reconnects"] = enc.reconnects;
    std::printf("  remote encoder %s: %llu failed batches, %llu reconnects\n", f.encoder_remote.c_str(),
                static_cast<unsigned long long>(enc.remote_failures), static_cast<unsigned long long>(enc.reconnects));
    for (const auto& n : enc.nodes) {
      summary["encoder"]["nodes"].push_back({{"address", n.address},
                                             {"frames", n.frames},
                                             {"batches", n.batches},
                                             {"busy_seconds", n.busy_seconds},
                                             {"failures", n.failures},
                                             {"reconnects", n.reconnects},
                                             {"streams", n.streams},
                                             {"up", n.up}});
      std::printf("    node %s: %llu frames in %llu batches, busy %.1f s, %llu failures, %llu reconnects, %llu streams%s\n",
                  n.address.c_str(), static_cast<unsigned long long>(n.frames),
                  static_cast<unsigned long long>(n.batches), n.busy_seconds,
                  static_cast<unsigned long long>(n.failures), static_cast<unsigned long long>(n.reconnects),
                  static_cast<unsigned long long>(n.streams), n.up ? "" : " (down)");
    }
  }
  summary["tokens_computed_share"] = total_share;
  // Layer-wise recompute lets reused tokens rejoin at some layers: the work
  // actually done, as a share of every layer's tokens.
  if (enc.layer_share() >= 0) summary["tokens_computed_share_by_layer"] = enc.layer_share();
  summary["hit_rate"] = enc.frames > 0 ? 1.0 - total_share : 0.0;
  if (f.state_bytes) {
    std::uint64_t evictions = 0, refills = 0;
    for (const auto& [stream, e] : enc.evictions) {
      evictions += e.first;
      refills += e.second;
    }
    summary["token_store"] = {{"capacity_bytes", enc.store_capacity}, {"peak_bytes", enc.store_peak},
                              {"state_bytes", *f.state_bytes}, {"evictions", evictions}, {"refills", refills}};
    if (enc.store_capacity > 0)
      std::printf("  token stores: peak %.1f of %.1f MiB ([index]), %llu evictions, %llu frames refilled in full\n",
                  enc.store_peak / 1048576.0, enc.store_capacity / 1048576.0, static_cast<unsigned long long>(evictions),
                  static_cast<unsigned long long>(refills));
  }
  if (!enc.shadow.empty()) {
    std::uint64_t checks = 0, refreshes = 0;
    double sum = 0, worst = 1.0;
    for (const auto& [stream, c] : enc.shadow) {
      checks += c.checks;
      refreshes += c.refreshes;
      sum += c.cosine_mean_sum;
      worst = std::min(worst, c.cosine_min);
    }
    const double check_share = enc.busy_seconds > 0 ? enc.shadow_seconds / enc.busy_seconds : 0.0;
    summary["fidelity"] = {{"checks", checks}, {"cosine_mean", checks ? sum / checks : 1.0}, {"cosine_min", worst},
                           {"refreshes", refreshes}, {"seconds", enc.shadow_seconds}, {"share_of_encoder", check_share}};
    std::printf("  fidelity: %llu checks against the full forward (%.1f s, %.1f%% of the encoder's time), cosine mean "
                "%.5f, worst token %.4f, %llu refreshes\n",
                static_cast<unsigned long long>(checks), enc.shadow_seconds, 100 * check_share,
                checks ? sum / checks : 1.0, worst, static_cast<unsigned long long>(refreshes));
  }
  {
    for (const auto& c : finished) {
      auto k = enc.control.find(c.stream);
      if (k == enc.control.end()) continue;
      const auto& r = k->second;
      std::printf("  %-12s held at layer tolerance %g: token cosine at the target's percentile %.5f",
                  c.name.c_str(), r.tolerance, r.measured);
      if (r.err_over_naive >= 0) std::printf(", err/naive %.3f", r.err_over_naive);
      std::printf(" over the checks at this rung; %llu checks, moved %llu safer and %llu cheaper",
                  static_cast<unsigned long long>(r.checks), static_cast<unsigned long long>(r.tighter),
                  static_cast<unsigned long long>(r.looser));
      if (r.answers_audited > 0)
        std::printf(", answers audited %llu, agreeing %llu", static_cast<unsigned long long>(r.answers_audited),
                    static_cast<unsigned long long>(r.answers_agreed));
      std::printf("\n");
    }
  }
  if (enc.frames == 0)
    std::printf("  tokens computed: none (no frame was encoded)\n");
  else
    std::printf("  tokens computed %.1f%% (hit rate %.1f%%; first frames and refreshes included)\n", 100 * total_share,
                100 * (1 - total_share));
  if (enc.layer_share() >= 0)
    std::printf("  tokens recomputed over the layers %.1f%% (layer-wise recompute adds reused tokens where their "
                "context moved)\n",
                100 * enc.layer_share());
  if (f.pace_fps > 0) {
    // Paced cameras deliver at their rate: the question is whether the
    // pipeline kept up with it, not how far below its capacity it ran.
    const bool kept_up = throughput >= 0.9 * f.pace_fps;
    summary["pace"] = {{"paced_cameras", f.paced_cameras}, {"pace_fps", f.pace_fps}, {"kept_up", kept_up}};
    std::printf("  paced: %d camera(s) deliver %.1f frames/s together; the pipeline took %.1f frames/s: %s\n",
                f.paced_cameras, f.pace_fps, throughput,
                kept_up ? "kept up"
                        : ("fell behind by " + std::to_string(static_cast<int>(100 * (1 - throughput / f.pace_fps))) +
                           "%")
                              .c_str());
    std::printf("  stages alone could take: decode+preprocess %.1f frames/s, encoder %.1f frames/s\n", decode_fps,
                encoder_fps);
  } else {
    std::printf("  stages alone: decode+preprocess %.1f frames/s, encoder %.1f frames/s; pipeline %.1f frames/s = "
                "%.2fx the slowest\n",
                decode_fps, encoder_fps, throughput, slowest < 1e30 ? throughput / slowest : 0.0);
  }
  if (f.answers) {
    const auto& ac = *f.answers;
    summary["answers"] = {{"answered", ac.answered},
                          {"on_demand", ac.on_demand},
                          {"superseded", ac.superseded},
                          {"failed", ac.failed},
                          {"per_stream", ac.per_stream},
                          {"prefill_ms_p50", ac.prefill_ms.recent_quantile(0.5)},
                          {"decode_ms_p50", ac.decode_ms.recent_quantile(0.5)},
                          {"total_ms_p50", ac.total_ms.recent_quantile(0.5)},
                          {"kv_updates", ac.kv_updates},
                          {"kv_updates_dropped", ac.kv_updates_dropped},
                          {"kv_updates_failed", ac.kv_updates_failed},
                          {"kv_update_ms_p50", ac.kv_update_ms.recent_quantile(0.5)},
                          {"last_error", ac.last_error}};
    if (ac.audits + ac.audits_skipped > 0) {
      const double agreement = ac.audits ? static_cast<double>(ac.audits_agreed) / static_cast<double>(ac.audits) : 1.0;
      const double llm_share = ac.answer_seconds > 0 ? ac.audit_seconds / ac.answer_seconds : 0.0;
      const double enc_share = enc.busy_seconds > 0 ? enc.audit_seconds / enc.busy_seconds : 0.0;
      summary["answers"]["audits"] = {{"audited", ac.audits},           {"agreed", ac.audits_agreed},
                                      {"agreement", agreement},         {"skipped", ac.audits_skipped},
                                      {"llm_seconds", ac.audit_seconds}, {"llm_share", llm_share},
                                      {"encoder_seconds", enc.audit_seconds}, {"encoder_share", enc_share}};
      std::printf("  answer audits: %llu answered again from a full recompute, %llu agreeing (%.1f%%), %llu skipped; "
                  "%.2f s of the language model (%.1f%% of its answering), %.2f s of full forwards (%.1f%% of the "
                  "encoder's time)\n",
                  static_cast<unsigned long long>(ac.audits), static_cast<unsigned long long>(ac.audits_agreed),
                  100 * agreement, static_cast<unsigned long long>(ac.audits_skipped), ac.audit_seconds,
                  100 * llm_share, enc.audit_seconds, 100 * enc_share);
    }
    if (f.requests) summary["answers"]["requests"] = {{"served", f.requests->first}, {"rejected", f.requests->second}};
    if (ac.with_truth > 0) {
      const double accuracy = static_cast<double>(ac.correct) / static_cast<double>(ac.with_truth);
      summary["answers"]["with_truth"] = ac.with_truth;
      summary["answers"]["correct"] = ac.correct;
      summary["answers"]["accuracy"] = accuracy;
      std::printf("  answers with a known truth %llu, right %llu: accuracy %.1f%%\n",
                  static_cast<unsigned long long>(ac.with_truth), static_cast<unsigned long long>(ac.correct), 100 * accuracy);
      for (const auto& [kind, counts] : ac.per_kind) {
        const auto [asked, right] = counts;
        summary["answers"]["per_kind"][kind] = {{"asked", asked}, {"right", right},
                                                {"accuracy", static_cast<double>(right) / static_cast<double>(asked)}};
        std::printf("    %-12s %3llu of %3llu right (%.0f%%)\n", kind.c_str(), static_cast<unsigned long long>(right),
                    static_cast<unsigned long long>(asked), 100.0 * static_cast<double>(right) / static_cast<double>(asked));
      }
    }
    std::printf("  answers %llu (%llu on demand, %llu superseded by newer frames, %llu failed); prefill p50 %.1f ms, "
                "decode p50 %.1f ms, frame-to-answer p50 %.1f ms\n",
                static_cast<unsigned long long>(ac.answered), static_cast<unsigned long long>(ac.on_demand),
                static_cast<unsigned long long>(ac.superseded), static_cast<unsigned long long>(ac.failed),
                ac.prefill_ms.recent_quantile(0.5), ac.decode_ms.recent_quantile(0.5), ac.total_ms.recent_quantile(0.5));
    if (ac.kv_updates + ac.kv_updates_dropped + ac.kv_updates_failed > 0)
      std::printf("  image K/V kept current between answers: %llu updates (p50 %.1f ms), %llu dropped for newer frames, "
                  "%llu failed\n",
                  static_cast<unsigned long long>(ac.kv_updates), ac.kv_update_ms.recent_quantile(0.5),
                  static_cast<unsigned long long>(ac.kv_updates_dropped),
                  static_cast<unsigned long long>(ac.kv_updates_failed));
  }
  summary["accounted"] = balanced;
  summary["auth_refused"] = connectors::curve_refused_total();
  summary["frames_failed"] = total_failed;
  // "Accounted" means counted, not fine: failures are named beside it.
  std::printf("  throughput %.2f frames/s, %llu out of order, every frame accounted: %s\n", throughput,
              static_cast<unsigned long long>(report.out_of_order),
              !balanced           ? "NO"
              : total_failed > 0 ? ("yes, but " + std::to_string(total_failed) + " failed (FAILED above)").c_str()
                                 : "yes");
  return summary;
}

}  // namespace vlcache::graph
