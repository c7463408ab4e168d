#include "graph/pipeline_probe.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>
#include <cmath>
#include <sstream>

#include "connectors/curve_keys.hpp"

namespace vlcache::graph {

pipeline_probe::pipeline_probe(caf::actor_system& sys, std::string pipeline) : sys_(sys), pipeline_(std::move(pipeline)) {}

void pipeline_probe::set_stages(actors::encoder_stats_actor encoder, actors::delivery_stats_actor delivery,
                                actors::answerer_stats_actor answerer) {
  std::lock_guard<std::mutex> lock(mutex_);
  encoder_ = std::move(encoder);
  delivery_ = std::move(delivery);
  answerer_ = std::move(answerer);
}

void pipeline_probe::add_source(const actors::source_stats_actor& source) {
  std::lock_guard<std::mutex> lock(mutex_);
  sources_.push_back(source);
}

void pipeline_probe::source_finished(const actors::source_counters& counters) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_[counters.stream] = counters;
}

pipeline_snapshot pipeline_probe::collect(std::chrono::milliseconds timeout) {
  std::vector<actors::source_stats_actor> sources;
  std::map<stream_id, actors::source_counters> finished;
  actors::encoder_stats_actor encoder;
  actors::delivery_stats_actor delivery;
  actors::answerer_stats_actor answerer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sources = sources_;
    finished = finished_;
    encoder = encoder_;
    delivery = delivery_;
    answerer = answerer_;
  }
  pipeline_snapshot s;
  s.pipeline = pipeline_;
  s.insecure = insecure_;
  s.auth_refused = connectors::curve_refused_total();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.running = !ended_at_s_;
    s.uptime_s = ended_at_s_.value_or(seconds_since(started_));
  }
  caf::scoped_actor self{sys_};
  std::map<stream_id, actors::source_counters> all = finished;
  auto silent = [&](const std::string& stage) { return [&s, stage](const caf::error&) { s.unanswered.push_back(stage); }; };
  for (std::size_t i = 0; i < sources.size(); ++i)
    self->request(sources[i], timeout, actors::stats_atom::value)
        .receive(
            [&](const actors::source_counters& c) {
              if (!finished.count(c.stream)) all[c.stream] = c;
            },
            silent("camera " + std::to_string(i)));
  for (auto& [id, c] : all) s.sources.push_back(c);
  if (encoder)
    self->request(encoder, timeout, actors::stats_atom::value)
        .receive([&](const actors::encoder_counters& c) { s.encoder = c; }, silent("encoder"));
  if (delivery)
    self->request(delivery, timeout, actors::stats_atom::value)
        .receive([&](const actors::latency_report& r) { s.latency = r; }, silent("delivery"));
  if (answerer)
    self->request(answerer, timeout, actors::stats_atom::value)
        .receive([&](const actors::answerer_counters& c) { s.answers = c; }, silent("answerer"));
  return s;
}

namespace {

std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void histogram(std::ostringstream& o, const std::string& name, const std::string& label, const std::string& value,
               const latency_histogram& h) {
  for (std::size_t i = 0; i < latency_histogram::bounds_ms.size(); ++i)
    o << name << "_bucket{" << label << "=\"" << value << "\",le=\"" << latency_histogram::bounds_ms[i] << "\"} "
      << h.bucket(i) << "\n";
  o << name << "_bucket{" << label << "=\"" << value << "\",le=\"+Inf\"} " << h.count() << "\n";
  o << name << "_sum{" << label << "=\"" << value << "\"} " << h.sum() << "\n";
  o << name << "_count{" << label << "=\"" << value << "\"} " << h.count() << "\n";
}

}  // namespace

void pipeline_probe::mark_ended() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ended_at_s_) ended_at_s_ = seconds_since(started_);
}

std::string to_prometheus(const pipeline_snapshot& s) {
  std::ostringstream o;
  o.precision(10);
  auto family = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  auto stream_of = [](const actors::source_counters& c) { return "stream=\"" + label_value(c.name) + "\""; };
  family("vlcache_up", "gauge", "1 while the pipeline runs; 0 once the run is over (the view held open after it).");
  o << "vlcache_up{pipeline=\"" << label_value(s.pipeline) << "\"} " << (s.running ? 1 : 0) << "\n";
  family("vlcache_stage_answered", "gauge",
         "1 when the stage answered this scrape in time; 0: its series below are absent or stale.");
  for (const char* stage : {"encoder", "delivery", "answerer"})
    o << "vlcache_stage_answered{stage=\"" << stage << "\"} " << (s.answered(stage) ? 1 : 0) << "\n";
  family("vlcache_insecure", "gauge",
         "1 when [security] insecure = true: endpoints beyond loopback are served without authentication.");
  o << "vlcache_insecure " << (s.insecure ? 1 : 0) << "\n";
  family("vlcache_auth_refused_total", "counter", "Peers refused by the CURVE allow-list (unknown client keys).");
  o << "vlcache_auth_refused_total " << s.auth_refused << "\n";
  family("vlcache_uptime_seconds", "gauge", "Seconds since the pipeline started.");
  o << "vlcache_uptime_seconds " << s.uptime_s << "\n";
  family("vlcache_frames_read_total", "counter", "Frames read from each camera.");
  for (const auto& c : s.sources) o << "vlcache_frames_read_total{" << stream_of(c) << "} " << c.read << "\n";
  family("vlcache_frames_encoded_total", "counter", "Frames that left the encoder and reached every sink.");
  for (const auto& c : s.sources) o << "vlcache_frames_encoded_total{" << stream_of(c) << "} " << c.encoded << "\n";
  family("vlcache_frames_failed_total", "counter", "Frames whose encoding or sink write failed.");
  for (const auto& c : s.sources) o << "vlcache_frames_failed_total{" << stream_of(c) << "} " << c.failed << "\n";
  family("vlcache_frames_dropped_total", "counter", "Frames dropped, by reason.");
  for (const auto& c : s.sources) {
    o << "vlcache_frames_dropped_total{" << stream_of(c) << ",reason=\"queue_oldest\"} " << c.dropped_oldest << "\n";
    o << "vlcache_frames_dropped_total{" << stream_of(c) << ",reason=\"no_credit_newest\"} " << c.dropped_newest << "\n";
    o << "vlcache_frames_dropped_total{" << stream_of(c) << ",reason=\"lost_in_transit\"} " << c.lost_in_transit << "\n";
  }
  family("vlcache_frames_in_flight", "gauge", "Frames between decode and the sinks.");
  for (const auto& c : s.sources) o << "vlcache_frames_in_flight{" << stream_of(c) << "} " << c.in_flight << "\n";
  family("vlcache_frames_queued", "gauge", "Frames waiting for credit in a camera's queue.");
  for (const auto& c : s.sources) o << "vlcache_frames_queued{" << stream_of(c) << "} " << c.queued << "\n";
  family("vlcache_view_cuts_total", "counter", "Frames that left the camera's view ([views]).");
  for (const auto& c : s.sources) o << "vlcache_view_cuts_total{" << stream_of(c) << "} " << c.view_cuts << "\n";
  family("vlcache_views_restored_total", "counter", "Of them, frames that went back to a kept view ([views]).");
  for (const auto& c : s.sources) o << "vlcache_views_restored_total{" << stream_of(c) << "} " << c.views_restored << "\n";
  // Each family's samples stay together, as the text format requires.
  struct token_counts {
    std::uint64_t computed = 0, total = 0, store = 0;
  };
  std::vector<token_counts> tokens;
  for (const auto& c : s.sources) {
    token_counts t;
    auto it = s.encoder.per_stream.find(c.stream);
    if (it != s.encoder.per_stream.end()) {
      t.computed = it->second.second;
      t.total = it->second.first * static_cast<std::uint64_t>(s.encoder.tokens_per_frame);
    }
    auto b = s.encoder.store_bytes.find(c.stream);
    if (b != s.encoder.store_bytes.end()) t.store = b->second;
    tokens.push_back(t);
  }
  family("vlcache_tokens_computed_total", "counter", "Patch tokens the vision encoder computed.");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    o << "vlcache_tokens_computed_total{" << stream_of(s.sources[i]) << "} " << tokens[i].computed << "\n";
  family("vlcache_tokens_total", "counter", "Patch tokens of the frames encoded (computed or reused).");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    o << "vlcache_tokens_total{" << stream_of(s.sources[i]) << "} " << tokens[i].total << "\n";
  family("vlcache_hit_rate", "gauge", "Share of patch tokens that came from the cache.");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    o << "vlcache_hit_rate{" << stream_of(s.sources[i]) << "} " << s.encoder.hit_rate(s.sources[i].stream) << "\n";
  family("vlcache_token_store_bytes", "gauge", "Bytes of the stream's token store (K/V, tokens).");
  for (std::size_t i = 0; i < tokens.size(); ++i)
    o << "vlcache_token_store_bytes{" << stream_of(s.sources[i]) << "} " << tokens[i].store << "\n";
  // One sample per camera, from the encoder's per-stream figures.
  auto per_camera = [&](const char* name, const char* type, const char* help, const auto& value) {
    family(name, type, help);
    for (const auto& c : s.sources) o << name << "{" << stream_of(c) << "} " << value(c.stream) << "\n";
  };
  auto evictions = [&](stream_id id) {
    auto e = s.encoder.evictions.find(id);
    return e == s.encoder.evictions.end() ? std::pair<std::uint64_t, std::uint64_t>{} : e->second;
  };
  per_camera("vlcache_token_store_evictions_total", "counter",
             "Times the stream's token store was given up to make room within [index].capacity_mb.",
             [&](stream_id id) { return evictions(id).first; });
  per_camera("vlcache_token_store_refills_total", "counter",
             "Frames that ran in full because the store had been evicted.",
             [&](stream_id id) { return evictions(id).second; });
  family("vlcache_token_store_total_bytes", "gauge", "Bytes of all streams' token stores together.");
  o << "vlcache_token_store_total_bytes " << s.encoder.store_total << "\n";
  family("vlcache_token_store_capacity_bytes", "gauge", "The stores' byte budget ([index].capacity_mb; 0 = unbounded).");
  o << "vlcache_token_store_capacity_bytes " << s.encoder.store_capacity << "\n";
  auto shadow = [&](stream_id id) {
    auto f = s.encoder.shadow.find(id);
    return f == s.encoder.shadow.end() ? actors::shadow_counters{} : f->second;
  };
  per_camera("vlcache_fidelity_checks_total", "counter",
             "Frames also run through the full forward and compared ([fidelity]).",
             [&](stream_id id) { return shadow(id).checks; });
  per_camera("vlcache_fidelity_cosine_mean", "gauge", "Mean token cosine to the full forward over the checks.",
             [&](stream_id id) { return shadow(id).cosine_mean(); });
  per_camera("vlcache_fidelity_cosine_min", "gauge", "The worst token's cosine to the full forward in any check.",
             [&](stream_id id) { return shadow(id).cosine_min; });
  per_camera("vlcache_fidelity_refreshes_total", "counter",
             "Checks below [fidelity].min_cosine: the stream was recomputed.",
             [&](stream_id id) { return shadow(id).refreshes; });
  if (!s.encoder.control.empty()) {
    auto control = [&](stream_id id) {
      auto k = s.encoder.control.find(id);
      return k == s.encoder.control.end() ? controller_report{} : k->second;
    };
    per_camera("vlcache_fidelity_layer_tolerance", "gauge",
               "The layer tolerance the fidelity controller holds the camera at ([fidelity] target).",
               [&](stream_id id) { return control(id).tolerance; });
    per_camera("vlcache_fidelity_cosine_low", "gauge",
               "Token cosine to the full forward at the target's low percentile, over the last checks.",
               [&](stream_id id) { return control(id).measured; });
    family("vlcache_fidelity_adjustments_total", "counter", "The controller's moves along the ladder, by direction.");
    for (const auto& c : s.sources) {
      const auto r = control(c.stream);
      o << "vlcache_fidelity_adjustments_total{" << stream_of(c) << ",direction=\"safer\"} " << r.tighter << "\n";
      o << "vlcache_fidelity_adjustments_total{" << stream_of(c) << ",direction=\"cheaper\"} " << r.looser << "\n";
    }
    family("vlcache_fidelity_answer_audits_total", "counter", "Answers also answered from a full recompute, by outcome.");
    for (const auto& c : s.sources) {
      const auto r = control(c.stream);
      o << "vlcache_fidelity_answer_audits_total{" << stream_of(c) << ",outcome=\"agreed\"} " << r.answers_agreed << "\n";
      o << "vlcache_fidelity_answer_audits_total{" << stream_of(c) << ",outcome=\"differed\"} "
        << r.answers_audited - r.answers_agreed << "\n";
    }
  }
  family("vlcache_fidelity_check_seconds_total", "counter", "Encoder time spent on fidelity checks (full forwards).");
  o << "vlcache_fidelity_check_seconds_total " << s.encoder.shadow_seconds << "\n";
  family("vlcache_camera_outages_total", "counter", "Times a network camera's stream dropped (it reconnects).");
  for (const auto& c : s.sources) o << "vlcache_camera_outages_total{" << stream_of(c) << "} " << c.outages << "\n";
  family("vlcache_camera_gap_seconds_total", "counter", "Seconds a network camera delivered no frames, over its outages.");
  for (const auto& c : s.sources) o << "vlcache_camera_gap_seconds_total{" << stream_of(c) << "} " << c.gap_seconds << "\n";
  family("vlcache_gate_noise_floor", "gauge",
         "The camera's sensor noise as the gate estimates it (sigma, levels; 0 unless [gate].noise_factor).");
  for (const auto& c : s.sources) o << "vlcache_gate_noise_floor{" << stream_of(c) << "} " << c.noise_floor << "\n";
  family("vlcache_gate_mad_threshold", "gauge", "The MAD threshold the gate applied to the camera's latest frame.");
  for (const auto& c : s.sources) o << "vlcache_gate_mad_threshold{" << stream_of(c) << "} " << c.mad_threshold << "\n";
  auto per_node = [&](const char* name, const char* type, const char* help, const auto& value) {
    if (s.encoder.nodes.empty()) return;
    family(name, type, help);
    for (const auto& n : s.encoder.nodes) o << name << "{node=\"" << label_value(n.address) << "\"} " << value(n) << "\n";
  };
  per_node("vlcache_node_frames_total", "counter", "Frames a remote encoder node (or \"local\", the fallback) encoded.",
           [](const actors::node_counters& n) { return n.frames; });
  per_node("vlcache_node_batches_total", "counter", "Batches sent to a remote encoder node.",
           [](const actors::node_counters& n) { return n.batches; });
  per_node("vlcache_node_busy_seconds_total", "counter", "Seconds a node's batches took, reply included.",
           [](const actors::node_counters& n) { return n.busy_seconds; });
  per_node("vlcache_node_failures_total", "counter", "A node's failed batches (down, timed out, refused).",
           [](const actors::node_counters& n) { return n.failures; });
  per_node("vlcache_node_reconnects_total", "counter", "Times a node was reached again after a failure.",
           [](const actors::node_counters& n) { return n.reconnects; });
  per_node("vlcache_node_streams", "gauge", "Streams whose token stores live on the node.",
           [](const actors::node_counters& n) { return n.streams; });
  per_node("vlcache_node_up", "gauge", "1 while the node works; 0 after a failed batch until it is reached again.",
           [](const actors::node_counters& n) { return n.up ? 1 : 0; });
  family("vlcache_encoder_batches_total", "counter", "Batches the encoder ran.");
  o << "vlcache_encoder_batches_total " << s.encoder.batches << "\n";
  family("vlcache_encoder_busy_seconds_total", "counter", "Seconds the encoder spent computing.");
  o << "vlcache_encoder_busy_seconds_total " << s.encoder.busy_seconds << "\n";
  family("vlcache_stage_latency_ms", "histogram", "Per-frame time in each stage, milliseconds.");
  for (const auto& [stage, v] : s.latency.stage_ms) histogram(o, "vlcache_stage_latency_ms", "stage", stage, v);
  family("vlcache_frames_out_of_order_total", "counter", "Frames that reached delivery out of order.");
  o << "vlcache_frames_out_of_order_total " << s.latency.out_of_order << "\n";
  if (s.answers) {
    const auto& a = *s.answers;
    family("vlcache_answers_total", "counter", "Answers given, per stream.");
    for (const auto& [stream, n] : a.per_stream)
      o << "vlcache_answers_total{stream=\"" << label_value(stream) << "\"} " << n << "\n";
    family("vlcache_answers_on_demand_total", "counter", "Answers to questions asked over the request endpoint.");
    o << "vlcache_answers_on_demand_total " << a.on_demand << "\n";
    family("vlcache_answers_superseded_total", "counter", "Frames due an answer replaced by a newer frame first.");
    o << "vlcache_answers_superseded_total " << a.superseded << "\n";
    family("vlcache_answers_failed_total", "counter", "Answers that failed (the stream went on).");
    o << "vlcache_answers_failed_total " << a.failed << "\n";
    family("vlcache_answer_audits_total", "counter",
           "Answers answered again from a full recompute ([fidelity] answer_audit_every), by outcome.");
    o << "vlcache_answer_audits_total{outcome=\"agreed\"} " << a.audits_agreed << "\n";
    o << "vlcache_answer_audits_total{outcome=\"differed\"} " << a.audits - a.audits_agreed << "\n";
    o << "vlcache_answer_audits_total{outcome=\"skipped\"} " << a.audits_skipped << "\n";
    family("vlcache_answer_audit_seconds_total", "counter", "Time audits took, by part (the language model, the full forward).");
    o << "vlcache_answer_audit_seconds_total{part=\"llm\"} " << a.audit_seconds << "\n";
    o << "vlcache_answer_audit_seconds_total{part=\"encoder\"} " << s.encoder.audit_seconds << "\n";
    family("vlcache_answers_with_truth_total", "counter", "Answers to questions whose answer a rendered scene knows.");
    o << "vlcache_answers_with_truth_total " << a.with_truth << "\n";
    family("vlcache_answers_correct_total", "counter", "Of those, answers equal to the truth.");
    o << "vlcache_answers_correct_total " << a.correct << "\n";
    family("vlcache_answers_pending", "gauge", "Frames and questions waiting for the language model.");
    o << "vlcache_answers_pending " << a.pending << "\n";
    family("vlcache_kv_updates_total", "counter",
           "Image K/V brought up to date with a frame between answers ([llm] keep_kv_current), by outcome.");
    o << "vlcache_kv_updates_total{outcome=\"done\"} " << a.kv_updates << "\n";
    o << "vlcache_kv_updates_total{outcome=\"dropped\"} " << a.kv_updates_dropped << "\n";
    o << "vlcache_kv_updates_total{outcome=\"failed\"} " << a.kv_updates_failed << "\n";
    family("vlcache_answer_latency_ms", "histogram", "Answer time by part, milliseconds.");
    histogram(o, "vlcache_answer_latency_ms", "part", "prefill", a.prefill_ms);
    histogram(o, "vlcache_answer_latency_ms", "part", "decode", a.decode_ms);
    histogram(o, "vlcache_answer_latency_ms", "part", "frame_to_answer", a.total_ms);
    histogram(o, "vlcache_answer_latency_ms", "part", "kv_update", a.kv_update_ms);
  }
  return o.str();
}

nlohmann::json per_stream_json(const pipeline_snapshot& s) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : s.sources) {
    auto it = s.encoder.per_stream.find(c.stream);
    const std::uint64_t computed = it == s.encoder.per_stream.end() ? 0 : it->second.second;
    auto ev = s.encoder.evictions.find(c.stream);
    const std::uint64_t evictions = ev == s.encoder.evictions.end() ? 0 : ev->second.first;
    const std::uint64_t refills = ev == s.encoder.evictions.end() ? 0 : ev->second.second;
    auto sh = s.encoder.shadow.find(c.stream);
    const actors::shadow_counters checks = sh == s.encoder.shadow.end() ? actors::shadow_counters{} : sh->second;
    auto k = s.encoder.control.find(c.stream);
    const controller_report* ctl = k == s.encoder.control.end() ? nullptr : &k->second;
    // null, not 0, when the answerer (busy with a batch) did not answer the probe.
    nlohmann::json answered = s.answered("answerer") ? nlohmann::json(0) : nlohmann::json(nullptr);
    if (s.answers) {
      auto a = s.answers->per_stream.find(c.name);
      if (a != s.answers->per_stream.end()) answered = a->second;
    }
    out[c.name] = {{"read", c.read},
                   {"encoded", c.encoded},
                   {"failed", c.failed},
                   {"dropped", c.dropped_oldest + c.dropped_newest},
                   {"dropped_oldest", c.dropped_oldest},
                   {"dropped_newest", c.dropped_newest},
                   {"lost_in_transit", c.lost_in_transit},
                   {"in_flight", c.in_flight},
                   {"queued", c.queued},
                   {"answered", answered},
                   {"tokens_computed", computed},
                   {"evictions", evictions},
                   {"refills", refills},
                   {"fidelity_checks", checks.checks},
                   {"fidelity_cosine_mean", checks.cosine_mean()},
                   {"fidelity_cosine_min", checks.cosine_min},
                   {"fidelity_refreshes", checks.refreshes},
                   {"fidelity_layer_tolerance", ctl ? nlohmann::json(ctl->tolerance) : nlohmann::json(nullptr)},
                   {"fidelity_cosine_low", ctl ? nlohmann::json(ctl->measured) : nlohmann::json(nullptr)},
                   {"fidelity_adjustments", ctl ? nlohmann::json(ctl->tighter + ctl->looser) : nlohmann::json(nullptr)},
                   {"hit_rate", s.encoder.hit_rate(c.stream)},
                   {"outages", c.outages},
                   {"gap_seconds", c.gap_seconds},
                   {"noise_floor", c.noise_floor},
                   {"mad_threshold", c.mad_threshold}};
  }
  return out;
}

}  // namespace vlcache::graph
