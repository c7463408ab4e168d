#include "graph/pipeline_runner.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/actor_error.hpp"
#include "actors/answerer_actor.hpp"
#include "actors/cache_shard_actor.hpp"
#include "actors/encoder_actor.hpp"
#include "actors/hasher_actor.hpp"
#include "actors/ingest_actor.hpp"
#include "actors/remote_encoder.hpp"
#include "actors/reassembly_actor.hpp"
#include "actors/sink_actor.hpp"
#include "actors/source_actor.hpp"
#include "connectors/request_endpoint.hpp"
#include "connectors/live_view.hpp"
#include "connectors/scene_video.hpp"
#include "core/statistics.hpp"
#include "graph/pipeline_probe.hpp"

namespace vlcache::graph {
namespace {

std::atomic<bool> stop_requested{false};
extern "C" void on_signal(int) { stop_requested = true; }


actors::flow_policy to_flow(drop_policy p) {
  switch (p) {
    case drop_policy::drop_oldest: return actors::flow_policy::drop_oldest;
    case drop_policy::drop_newest: return actors::flow_policy::drop_newest;
    case drop_policy::block: return actors::flow_policy::block;
  }
  return actors::flow_policy::block;
}

}  // namespace

int run_pipeline(const pipeline_spec& spec, const run_options& options) {
  if (auto errors = validate(spec); !errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "error: %s\n", e.c_str());
    return 1;
  }
  std::shared_ptr<vision_encoder> encoder;
  if (spec.encoder.remote.empty()) {
    auto loaded = vision_encoder::load(spec.encoder.model, spec.encoder.options);
    if (!loaded) {
      // The budget is checked against the model's state size at load.
      const bool budget = spec.cache.index && loaded.err().message.find("token store budget") != std::string::npos;
      std::fprintf(stderr, "error: %s: %s\n", budget ? "[index].capacity_mb" : "[encoder].model",
                   loaded.err().message.c_str());
      return 1;
    }
    encoder = std::move(*loaded);
    if (encoder->random_weights())
      std::printf("NOTICE: %s -- tokens come from RANDOM weights and mean nothing\n", encoder->description().c_str());
    else
      std::printf("encoder: %s\n", encoder->description().c_str());
  }

  std::shared_ptr<answerer> llm;
  if (spec.llm.enabled) {
    const std::string model = spec.llm.model.empty() ? spec.encoder.model : spec.llm.model;
    auto loaded = answerer::load(model, spec.llm.tokenizer, spec.llm.options, spec.llm.answer);
    if (!loaded) {
      std::fprintf(stderr, "error: [llm]: %s\n", loaded.err().message.c_str());
      return 1;
    }
    llm = std::move(*loaded);
    if (encoder && encoder->config().output_dim() != llm->model().config().hidden_size) {
      std::fprintf(stderr, "error: [llm].model: the language model is %d wide but the encoder's tokens are %d wide\n",
                   llm->model().config().hidden_size, encoder->config().output_dim());
      return 1;
    }
    std::printf("%s%s\n", llm->model().random_weights() ? "NOTICE: answers come from RANDOM weights: " : "llm: ",
                llm->model().description().c_str());
  }

  // Cameras on rendered scenes: their frames, and what each frame answers.
  std::vector<std::shared_ptr<const connectors::scene_truth>> truths(spec.cameras.size());
  for (std::size_t i = 0; i < spec.cameras.size(); ++i) {
    if (!connectors::is_scene_folder(spec.cameras[i].source)) continue;
    auto t = connectors::read_scene(spec.cameras[i].source);
    if (!t) {
      std::fprintf(stderr, "error: [camera[%zu]].source: %s\n", i, t.err().message.c_str());
      return 1;
    }
    truths[i] = std::make_shared<const connectors::scene_truth>(std::move(*t));
  }

  std::vector<std::shared_ptr<connectors::line_sink>> outputs;
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    auto f = find_sink_kind(spec.sinks[i].kind)->make(spec.sinks[i]);  // validate() checked the kind
    if (!f) {
      std::fprintf(stderr, "error: [sink[%zu]]: %s\n", i, f.err().message.c_str());
      return 1;
    }
    outputs.push_back(std::move(*f));
  }

  caf::actor_system_config cfg;
  actors::register_error_category(cfg);
  cfg.set("scheduler.max-threads", static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  cfg.set("logger.console", caf::atom("none"));
  actors::announce_remote_types(cfg);
  cfg.load<caf::io::middleman>();
  caf::actor_system sys{cfg};
  caf::scoped_actor runner{sys};
  pipeline_probe probe(sys, spec.name);
  std::shared_ptr<connectors::live_view> view;
  const std::string http = options.http.empty() ? spec.view.http : options.http;
  if (!http.empty()) {
    const auto colon = http.rfind(':');
    connectors::live_view_options vo;
    vo.host = colon == std::string::npos ? http : http.substr(0, colon);
    vo.port = colon == std::string::npos ? 0 : std::atoi(http.c_str() + colon + 1);
    vo.max_view_fps = spec.view.max_view_fps;
    auto started = connectors::live_view::start(
        vo, spec.name, [&probe] { return to_prometheus(probe.collect()); },
        [&probe] { return per_stream_json(probe.collect()); });
    if (!started) {
      std::fprintf(stderr, "error: --http / [view].http: %s\n", started.err().message.c_str());
      return 1;
    }
    view = std::move(*started);
    std::printf("view: live page at %s/ (metrics at /metrics)\n", view->address().c_str());
    std::fflush(stdout);
  }

  actors::encoder_backend backend;
  backend.local = encoder;
  if (!spec.encoder.remote.empty()) {
    const auto colon = spec.encoder.remote.rfind(':');
    const std::string host = spec.encoder.remote.substr(0, colon);
    const auto port = static_cast<std::uint16_t>(std::stoi(spec.encoder.remote.substr(colon + 1)));
    auto node = sys.middleman().remote_actor(host, port);
    if (!node) {
      std::fprintf(stderr, "error: [encoder].remote: cannot reach the encoder node at %s: %s\n",
                   spec.encoder.remote.c_str(), sys.render(node.error()).c_str());
      return 1;
    }
    std::string problem;
    runner->request(*node, std::chrono::seconds(10), actors::encoder_info_atom::value)
        .receive(
            [&](const actors::remote_encoder_info& info) {
              std::printf("encoder: remote node %s: %s\n", spec.encoder.remote.c_str(), info.description.c_str());
              if (info.image_size != spec.cache.grid.image_size || info.patch_size != spec.cache.grid.patch_size)
                problem = "the node encodes " + std::to_string(info.image_size) + "/" + std::to_string(info.patch_size) +
                          " but [input] is " + std::to_string(spec.cache.grid.image_size) + "/" +
                          std::to_string(spec.cache.grid.patch_size);
              backend.num_patches = info.num_patches;
              backend.image_size = info.image_size;
            },
            [&](const caf::error& e) { problem = "the node did not answer: " + sys.render(e); });
    if (!problem.empty()) {
      std::fprintf(stderr, "error: [encoder].remote: %s\n", problem.c_str());
      return 1;
    }
    backend.remote = *node;
  }

  if (view) outputs.push_back(view);  // the view keeps the latest answers, as a sink
  std::vector<caf::actor> sinks;
  for (auto& out : outputs) sinks.push_back(sys.spawn(actors::sink_actor, out));
  actors::reassembly_links routing;
  if (llm) {
    // The answerer computes for seconds per message: its own thread.
    routing.answerer = sys.spawn<caf::detached>(actors::answerer_actor, llm,
                                                actors::answerer_settings{spec.llm.question, 16, spec.llm.max_batch}, sinks);
    routing.policy = spec.llm.policy;
  }
  if (view)
    routing.view = [view, side = spec.cache.grid.side()](connectors::view_frame f) {
      f.grid_side = side;
      view->offer_frame(std::move(f));
    };
  if (options.on_tokens)
    routing.tokens = [tap = options.on_tokens](const actors::frame_tag& t, const tensor_handle& tokens) {
      tap(t.stream_name, t.seq, tokens);
    };
  auto reassembly = sys.spawn(actors::reassembly_actor, sinks, routing);
  std::unique_ptr<connectors::request_server> requests;
  if (llm && !spec.llm.request_endpoint.empty()) {
    auto server = connectors::request_server::start(
        spec.llm.request_endpoint, [&sys, reassembly](const std::string& stream, const std::string& question) {
          caf::scoped_actor asker{sys};
          std::string reply;
          asker->request(reassembly, std::chrono::minutes(10), actors::ask_atom::value, stream, question)
              .receive([&](const actors::answer_record& r) { reply = actors::answer_line(r); },
                       [&](const caf::error& e) {
                         reply = nlohmann::json{{"error", actors::error_text(sys, e)}}.dump();
                       });
          return reply;
        });
    if (!server) {
      std::fprintf(stderr, "error: [llm].request_endpoint: %s\n", server.err().message.c_str());
      return 1;
    }
    requests = std::move(*server);
    std::printf("llm: questions on demand at %s\n", spec.llm.request_endpoint.c_str());
  }

  // Shards own bands of whole patch rows.
  const auto& grid = spec.cache.grid;
  std::vector<caf::actor> shards;
  const int rows = grid.side(), count = std::min(spec.flow.shards, rows);
  for (int i = 0; i < count; ++i) {
    const int r0 = rows * i / count, r1 = rows * (i + 1) / count;
    shards.push_back(sys.spawn(actors::cache_shard, grid, spec.cache.gate, r0 * rows, r1 * rows));
  }
  actors::encoder_settings es;
  es.batch_tokens = spec.encoder.batch_tokens;
  es.batch_timeout = std::chrono::microseconds(static_cast<long>(spec.encoder.batch_timeout_ms * 1000));
  // The encoder computes for a long time per message: its own thread keeps
  // it from starving the scheduler that decodes, hashes and gates.
  auto enc = sys.spawn<caf::detached>(actors::encoder_actor, backend, es, reassembly);

  auto engine = std::make_shared<const signature_engine>(*signature_engine::make(grid));
  std::vector<actors::hasher_actor> hashers;
  for (int i = 0; i < spec.flow.hashers; ++i) hashers.push_back(sys.spawn(actors::hasher, engine));

  std::vector<caf::actor> sources;
  for (std::size_t i = 0; i < spec.cameras.size(); ++i) {
    const auto& c = spec.cameras[i];
    actors::source_settings ss;
    ss.name = c.name;
    ss.stream = static_cast<stream_id>(i);
    ss.video = {truths[i] ? truths[i]->frames_pattern : c.source, c.fps, c.start_frame, c.max_frames};
    ss.truth = truths[i];
    ss.preprocess = spec.cache.preprocess;
    ss.preprocess.pad_to_square = c.pad_to_square;
    ss.loop = c.loop;
    ss.retries = c.retries;
    ss.max_in_flight = spec.flow.max_in_flight;
    ss.queue = spec.flow.queue;
    ss.policy = to_flow(spec.flow.policy);
    ss.drift = spec.drift;
    ss.pace_fps = c.pace_fps;
    sources.push_back(sys.spawn(actors::source_actor, ss, hashers, shards, enc, caf::actor_cast<caf::actor>(runner)));
  }

  probe.set_stages(enc, reassembly, routing.answerer);
  for (const auto& s : sources) probe.add_source(s);

  // Supervision: a stage that dies stops the run with a clear message
  // instead of leaving it waiting for frames that will never come.
  std::map<caf::actor_addr, std::string> stage_names;
  auto watch = [&](const caf::actor& a, const std::string& name) {
    runner->monitor(a);
    stage_names[a.address()] = name;
  };
  watch(enc, "encoder");
  watch(reassembly, "reassembly");
  if (routing.answerer) watch(routing.answerer, "answerer");
  for (std::size_t i = 0; i < shards.size(); ++i) watch(shards[i], "cache shard " + std::to_string(i));
  for (std::size_t i = 0; i < sinks.size(); ++i) watch(sinks[i], "sink " + std::to_string(i));
  for (std::size_t i = 0; i < hashers.size(); ++i)
    watch(caf::actor_cast<caf::actor>(hashers[i]), "hasher " + std::to_string(i));
  for (std::size_t i = 0; i < sources.size(); ++i) watch(sources[i], "camera '" + spec.cameras[i].name + "'");
  std::string failed_stage;

  caf::actor ingest;
  if (spec.ingest.enabled) {
    actors::ingest_settings is;
    is.endpoint = spec.ingest.endpoint;
    is.bind = spec.ingest.bind;
    is.idle_timeout_s = spec.ingest.idle_timeout_s;
    is.max_streams = spec.ingest.max_streams;
    is.stop_when_idle = spec.ingest.stop_when_idle;
    is.first_stream = static_cast<stream_id>(spec.cameras.size());
    is.source.preprocess = spec.cache.preprocess;
    is.source.max_in_flight = spec.flow.max_in_flight;
    is.source.queue = spec.flow.queue;
    is.source.drift = spec.drift;
    // Live cameras cannot be paused: without credit the newest frame goes.
    is.source.policy = spec.flow.policy == drop_policy::block ? actors::flow_policy::drop_newest : to_flow(spec.flow.policy);
    ingest = sys.spawn<caf::detached>(actors::ingest_actor, is, hashers, shards, enc, caf::actor_cast<caf::actor>(runner));
    watch(ingest, "ingest");
  }
  bool ingest_done = !spec.ingest.enabled;
  actors::ingest_counters ingest_stats;

  stop_requested = false;
  auto old_int = std::signal(SIGINT, on_signal);
  auto old_term = std::signal(SIGTERM, on_signal);
  // From here a signal drains the pipeline instead of killing the process.
  std::printf("running: %zu camera(s)%s; SIGINT or SIGTERM stops them and drains the frames in flight\n",
              spec.cameras.size(), spec.ingest.enabled ? " and the network ingest" : "");
  std::fflush(stdout);
  const auto started = actors::steady::now();
  std::vector<actors::source_counters> finished;
  bool stopping = false;
  const auto tick = std::chrono::milliseconds(200);
  auto next_progress = started + std::chrono::duration_cast<actors::steady::duration>(
                                     std::chrono::duration<double>(spec.flow.progress_seconds));
  while ((finished.size() < sources.size() || !ingest_done) && failed_stage.empty()) {
    runner->receive(
        [&](actors::eos_atom, const actors::source_counters& c) {
          finished.push_back(c);
          probe.source_finished(c);
        },
        [&](actors::new_stream_atom, const caf::actor& source, const std::string& name) {
          sources.push_back(source);
          probe.add_source(source);
          watch(source, "camera '" + name + "'");
          std::printf("ingest: new stream '%s'\n", name.c_str());
        },
        [&](actors::ingest_done_atom, const actors::ingest_counters& c) {
          ingest_done = true;
          ingest_stats = c;
          if (!c.error.empty()) std::fprintf(stderr, "error: [ingest].endpoint: %s\n", c.error.c_str());
        },
        [&](const caf::down_msg& d) {
          const bool source_done = std::any_of(finished.begin(), finished.end(), [&](const auto& c) {
            return stage_names[d.source] == "camera '" + c.name + "'";
          });
          if (d.source == ingest.address() && ingest_done) return;
          if (!source_done) failed_stage = stage_names[d.source] + " stopped: " + sys.render(d.reason);
        },
        caf::after(tick) >> [] {});
    if (stop_requested && !stopping) {
      stopping = true;
      std::printf("stopping: draining frames in flight\n");
      for (const auto& s : sources) runner->send(s, actors::stop_atom::value);
      if (ingest) runner->send(ingest, actors::stop_atom::value);
    }
    if (options.progress && spec.flow.progress_seconds > 0 && actors::steady::now() >= next_progress) {
      next_progress += std::chrono::duration_cast<actors::steady::duration>(
          std::chrono::duration<double>(spec.flow.progress_seconds));
      // The same probe that serves /metrics: live sources, finished ones, the encoder.
      const auto snap = probe.collect(std::chrono::seconds(1));
      std::uint64_t read = 0, encoded = 0, dropped = 0, in_flight = 0;
      for (const auto& c : snap.sources) {
        read += c.read;
        encoded += c.encoded;
        dropped += c.dropped_newest + c.dropped_oldest;
        in_flight += c.in_flight;
      }
      const auto& ec = snap.encoder;
      const double secs = std::chrono::duration<double>(actors::steady::now() - started).count();
      char tokens[96];
      if (!snap.answered("encoder")) {
        // A busy encoder (a long batch) misses the probe's deadline: say so, never print zeros as figures.
        std::snprintf(tokens, sizeof tokens, "tokens computed unknown (the encoder did not answer within 1 s)");
      } else {
        const double share = ec.frames > 0 ? double(ec.tokens) / (double(ec.frames) * ec.tokens_per_frame) : 0.0;
        std::snprintf(tokens, sizeof tokens, "tokens computed %.1f%% (hit rate %.1f%%)", 100 * share, 100 * (1 - share));
      }
      std::printf("progress: %.1fs %llu read, %llu encoded (%.2f frames/s), %s, %llu in flight, %llu dropped%s\n", secs,
                  static_cast<unsigned long long>(read), static_cast<unsigned long long>(encoded), encoded / secs, tokens,
                  static_cast<unsigned long long>(in_flight), static_cast<unsigned long long>(dropped),
                  snap.unanswered.size() > static_cast<std::size_t>(!snap.answered("encoder")) ? " (some stages did not answer)" : "");
    }
  }
  const double seconds = std::chrono::duration<double>(actors::steady::now() - started).count();
  if (!failed_stage.empty()) std::fprintf(stderr, "error: %s; the pipeline stops\n", failed_stage.c_str());
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);

  const auto final_snapshot = probe.collect(std::chrono::seconds(5));
  const actors::latency_report& report = final_snapshot.latency;
  const actors::encoder_counters& enc_stats = final_snapshot.encoder;
  for (const auto& stage : final_snapshot.unanswered)
    std::fprintf(stderr, "warning: the %s did not answer the final count within 5 s; its figures below are missing\n",
                 stage.c_str());
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) { return a.stream < b.stream; });
  nlohmann::json summary{{"pipeline", spec.name}, {"seconds", seconds}, {"encoder_remote", spec.encoder.remote}};
  if (encoder) summary["random_weights"] = encoder->random_weights();
  bool balanced = true;
  std::uint64_t total_read = 0, total_encoded = 0;
  std::printf("\nsummary of '%s' after %.1f s\n", spec.name.c_str(), seconds);
  for (const auto& c : finished) {
    const auto ps = enc_stats.per_stream.count(c.stream) ? enc_stats.per_stream.at(c.stream)
                                                          : std::pair<std::uint64_t, std::uint64_t>{0, 0};
    const double share = ps.first > 0 ? double(ps.second) / (double(ps.first) * enc_stats.tokens_per_frame) : 0.0;
    balanced &= c.balanced();
    total_read += c.read;
    total_encoded += c.encoded;
    std::printf("  %-12s read %5llu = encoded %5llu + dropped %llu (oldest) + %llu (newest) + failed %llu%s%s%s\n",
                c.name.c_str(), static_cast<unsigned long long>(c.read), static_cast<unsigned long long>(c.encoded),
                static_cast<unsigned long long>(c.dropped_oldest), static_cast<unsigned long long>(c.dropped_newest),
                static_cast<unsigned long long>(c.failed), c.balanced() ? "" : "  UNACCOUNTED FRAMES",
                c.lost_in_transit ? ("; lost in transit " + std::to_string(c.lost_in_transit)).c_str() : "",
                c.error.empty() ? "" : ("  (" + c.error + ")").c_str());
    summary["streams"].push_back({{"name", c.name},
                                  {"frames_read", c.read},
                                  {"frames_encoded", c.encoded},
                                  {"frames_failed", c.failed},
                                  {"dropped", {{"oldest", c.dropped_oldest}, {"newest", c.dropped_newest}}},
                                  {"reopened", c.reopened},
                                  {"lost_in_transit", c.lost_in_transit},
                                  {"tokens_computed_share", share},
                                  {"hit_rate", ps.first > 0 ? 1.0 - share : 0.0},
                                  {"store_evictions", enc_stats.evictions.count(c.stream) ? enc_stats.evictions.at(c.stream).first : 0},
                                  {"store_refills", enc_stats.evictions.count(c.stream) ? enc_stats.evictions.at(c.stream).second : 0},
                                  {"error", c.error}});
  }
  nlohmann::json stages;
  for (const auto& [stage, v] : report.stage_ms) {
    // Quantiles of the most recent frames (a bounded window); counts over the whole run.
    stages[stage] = {{"p50_ms", v.recent_quantile(0.5)}, {"p95_ms", v.recent_quantile(0.95)}, {"count", v.count()}};
    std::printf("  %-10s p50 %8.2f ms  p95 %8.2f ms\n", stage.c_str(), v.recent_quantile(0.5), v.recent_quantile(0.95));
  }
  summary["latency"] = stages;
  summary["frames_read"] = total_read;
  summary["frames_encoded"] = total_encoded;
  summary["throughput_fps"] = seconds > 0 ? total_encoded / seconds : 0.0;
  summary["out_of_order"] = report.out_of_order;
  if (spec.ingest.enabled) {
    summary["ingest"] = {{"messages", ingest_stats.messages},
                         {"streams_opened", ingest_stats.streams_opened},
                         {"streams_closed", ingest_stats.streams_closed},
                         {"rejected", ingest_stats.rejected}};
    std::uint64_t rejected = 0;
    for (const auto& [reason, n] : ingest_stats.rejected) rejected += n;
    std::printf("  ingest: %llu messages, %llu streams, %llu rejected\n",
                static_cast<unsigned long long>(ingest_stats.messages),
                static_cast<unsigned long long>(ingest_stats.streams_opened), static_cast<unsigned long long>(rejected));
    for (const auto& [reason, n] : ingest_stats.rejected)
      std::printf("    rejected %llu: %s\n", static_cast<unsigned long long>(n), reason.c_str());
  }
  // Each stage's throughput on its own: frames over the time it was busy.
  // The pipeline overlaps the stages, so its throughput should approach the
  // slowest one's.
  double decode_seconds = 0;
  for (const auto& c : finished) decode_seconds += c.decode_seconds;
  const double decode_fps = decode_seconds > 0 ? total_read / decode_seconds : 0.0;
  const double encoder_fps = enc_stats.busy_seconds > 0 ? enc_stats.frames / enc_stats.busy_seconds : 0.0;
  const double slowest = std::min(decode_fps > 0 ? decode_fps : 1e30, encoder_fps > 0 ? encoder_fps : 1e30);
  const double throughput = seconds > 0 ? total_encoded / seconds : 0.0;
  summary["stage_throughput_fps"] = {{"decode_preprocess", decode_fps}, {"encoder", encoder_fps}};
  summary["slowest_stage_fps"] = slowest;
  summary["throughput_over_slowest_stage"] = slowest < 1e30 ? throughput / slowest : 0.0;
  const double total_share = enc_stats.frames > 0
                                 ? double(enc_stats.tokens) / (double(enc_stats.frames) * enc_stats.tokens_per_frame)
                                 : 0.0;
  summary["encoder"] = {{"batches", enc_stats.batches}, {"frames", enc_stats.frames}, {"tokens_computed", enc_stats.tokens}};
  summary["tokens_computed_share"] = total_share;
  // Layer-wise recompute lets reused tokens rejoin at some layers: the work
  // actually done, as a share of every layer's tokens.
  if (enc_stats.layers > 0 && enc_stats.frames > 0)
    summary["tokens_computed_share_by_layer"] =
        double(enc_stats.layer_tokens) / (double(enc_stats.frames) * enc_stats.tokens_per_frame * enc_stats.layers);
  summary["hit_rate"] = enc_stats.frames > 0 ? 1.0 - total_share : 0.0;
  if (encoder) {
    std::uint64_t evictions = 0, refills = 0;
    for (const auto& [stream, e] : enc_stats.evictions) {
      evictions += e.first;
      refills += e.second;
    }
    summary["token_store"] = {{"capacity_bytes", enc_stats.store_capacity}, {"peak_bytes", enc_stats.store_peak},
                              {"state_bytes", encoder->state_bytes()}, {"evictions", evictions},
                              {"refills", refills}};
    if (enc_stats.store_capacity > 0)
      std::printf("  token stores: peak %.1f of %.1f MiB ([index]), %llu evictions, %llu frames refilled in full\n",
                  enc_stats.store_peak / 1048576.0, enc_stats.store_capacity / 1048576.0,
                  static_cast<unsigned long long>(evictions), static_cast<unsigned long long>(refills));
  }
  std::printf("  tokens computed %.1f%% (hit rate %.1f%%; first frames and refreshes included)\n", 100 * total_share,
              100 * (1 - total_share));
  if (summary.contains("tokens_computed_share_by_layer"))
    std::printf("  tokens recomputed over the layers %.1f%% (layer-wise recompute adds reused tokens where their "
                "context moved)\n",
                100 * summary["tokens_computed_share_by_layer"].get<double>());
  std::printf("  stages alone: decode+preprocess %.1f frames/s, encoder %.1f frames/s; pipeline %.1f frames/s = %.2fx the slowest\n",
              decode_fps, encoder_fps, throughput, slowest < 1e30 ? throughput / slowest : 0.0);
  if (routing.answerer) {
    // Answers still being computed are waited for, so the summary counts them.
    // Frames already due an answer are answered before the summary counts.
    actors::answerer_counters ac;
    const auto give_up = actors::steady::now() + std::chrono::minutes(5);
    do {
      ac.pending = 0;
      runner->request(routing.answerer, std::chrono::minutes(10), actors::stats_atom::value)
          .receive([&](const actors::answerer_counters& c) { ac = c; }, [](const caf::error&) {});
      if (ac.pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } while (ac.pending > 0 && actors::steady::now() < give_up);
    summary["answers"] = {{"answered", ac.answered},
                          {"on_demand", ac.on_demand},
                          {"superseded", ac.superseded},
                          {"failed", ac.failed},
                          {"per_stream", ac.per_stream},
                          {"prefill_ms_p50", ac.prefill_ms.recent_quantile(0.5)},
                          {"decode_ms_p50", ac.decode_ms.recent_quantile(0.5)},
                          {"total_ms_p50", ac.total_ms.recent_quantile(0.5)},
                          {"last_error", ac.last_error}};
    if (requests) summary["answers"]["requests"] = {{"served", requests->served()}, {"rejected", requests->rejected()}};
    if (ac.with_truth > 0) {
      const double accuracy = static_cast<double>(ac.correct) / static_cast<double>(ac.with_truth);
      summary["answers"]["with_truth"] = ac.with_truth;
      summary["answers"]["correct"] = ac.correct;
      summary["answers"]["accuracy"] = accuracy;
      std::printf("  answers with a known truth %llu, right %llu: accuracy %.1f%%\n",
                  static_cast<unsigned long long>(ac.with_truth), static_cast<unsigned long long>(ac.correct), 100 * accuracy);
    }
    std::printf("  answers %llu (%llu on demand, %llu superseded by newer frames, %llu failed); prefill p50 %.1f ms, "
                "decode p50 %.1f ms, frame-to-answer p50 %.1f ms\n",
                static_cast<unsigned long long>(ac.answered), static_cast<unsigned long long>(ac.on_demand),
                static_cast<unsigned long long>(ac.superseded), static_cast<unsigned long long>(ac.failed),
                ac.prefill_ms.recent_quantile(0.5), ac.decode_ms.recent_quantile(0.5), ac.total_ms.recent_quantile(0.5));
  }
  summary["accounted"] = balanced;
  std::printf("  throughput %.2f frames/s, %llu out of order, every frame accounted: %s\n",
              seconds > 0 ? total_encoded / seconds : 0.0, static_cast<unsigned long long>(report.out_of_order),
              balanced ? "yes" : "NO");
  if (!options.summary_json.empty()) {
    std::ofstream f(options.summary_json);
    if (!f) std::fprintf(stderr, "error: cannot write '%s'\n", options.summary_json.c_str());
    else f << summary.dump(2) << "\n";
  }
  if (view) {
    const double hold = options.hold_s >= 0 ? options.hold_s : spec.view.hold_s;
    if (hold > 0) {
      std::printf("view: serving the final numbers for %.0f s more (Ctrl-C ends it)\n", hold);
      std::fflush(stdout);
      stop_requested = false;
      old_int = std::signal(SIGINT, on_signal);
      const auto until = actors::steady::now() + std::chrono::duration_cast<actors::steady::duration>(
                                                     std::chrono::duration<double>(hold));
      while (actors::steady::now() < until && !stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::signal(SIGINT, old_int);
    }
    view->stop();
  }
  for (auto& s : sources) runner->send_exit(s, caf::exit_reason::user_shutdown);
  runner->send_exit(enc, caf::exit_reason::user_shutdown);
  requests.reset();
  runner->send_exit(reassembly, caf::exit_reason::user_shutdown);
  if (routing.answerer) runner->send_exit(routing.answerer, caf::exit_reason::user_shutdown);
  for (auto& s : shards) runner->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& s : sinks) runner->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& h : hashers) runner->send_exit(h, caf::exit_reason::user_shutdown);
  if (ingest) runner->send_exit(ingest, caf::exit_reason::user_shutdown);
  return balanced && report.out_of_order == 0 && failed_stage.empty() ? 0 : 1;
}

}  // namespace vlcache::graph
