#include "graph/pipeline_runner.hpp"
#include "core/base/elapsed.hpp"

#include <algorithm>

#include "connectors/video_reader.hpp"
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <nlohmann/json.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/actor_error.hpp"
#include "actors/answer_router_actor.hpp"
#include "actors/answerer_actor.hpp"
#include "actors/cache_shard_actor.hpp"
#include "actors/encoder_actor.hpp"
#include "actors/frame_planner_actor.hpp"
#include "actors/hasher_actor.hpp"
#include "actors/ingest_actor.hpp"
#include "actors/remote_encoder.hpp"
#include "actors/delivery_actor.hpp"
#include "graph/host_port.hpp"
#include "actors/sink_actor.hpp"
#include "actors/source_actor.hpp"
#include "connectors/request_endpoint.hpp"
#include "connectors/live_view.hpp"
#include "graph/pipeline_chat.hpp"
#include "connectors/scene_video.hpp"
#include "core/base/statistics.hpp"
#include "graph/pipeline_probe.hpp"
#include "graph/pipeline_summary.hpp"
#include "graph/run_guard.hpp"

namespace vlcache::graph {
namespace {


/// What the run needs before any actor exists: the models, the scenes'
/// truths, the sinks' outputs. Errors are printed naming their key.
struct loaded_parts {
  std::shared_ptr<vision_encoder> encoder;  ///< null when a remote node runs it
  std::shared_ptr<answerer> llm;
  std::vector<std::shared_ptr<const connectors::scene_truth>> truths;  ///< per camera; null: not a scene
  std::vector<std::shared_ptr<connectors::line_sink>> outputs;
};

std::optional<loaded_parts> load_parts(const pipeline_spec& spec) {
  loaded_parts m;
  if (spec.encoder.remote.empty() || spec.encoder.fallback_local) {
    auto loaded = vision_encoder::load(spec.encoder.model, spec.encoder.options);
    if (!loaded) {
      // The budget is checked against the model's state size at load.
      const bool budget = spec.cache.index && loaded.err().message.find("token store budget") != std::string::npos;
      std::fprintf(stderr, "error: %s: %s\n", budget ? "[index].capacity_mb" : "[encoder].model",
                   loaded.err().message.c_str());
      return std::nullopt;
    }
    m.encoder = std::move(*loaded);
    if (m.encoder->random_weights())
      std::printf("NOTICE: %s -- tokens come from RANDOM weights and mean nothing\n", m.encoder->description().c_str());
    else
      std::printf("encoder: %s%s\n", spec.encoder.remote.empty() ? "" : "local fallback: ",
                  m.encoder->description().c_str());
  }
  if (spec.llm.enabled) {
    const std::string model = spec.llm.model.empty() ? spec.encoder.model : spec.llm.model;
    auto loaded = answerer::load(model, spec.llm.tokenizer, spec.llm.options, spec.llm.answer);
    if (!loaded) {
      std::fprintf(stderr, "error: [llm]: %s\n", loaded.err().message.c_str());
      return std::nullopt;
    }
    m.llm = std::move(*loaded);
    if (m.encoder && m.encoder->config().output_dim() != m.llm->model().config().hidden_size) {
      std::fprintf(stderr, "error: [llm].model: the language model is %d wide but the encoder's tokens are %d wide\n",
                   m.llm->model().config().hidden_size, m.encoder->config().output_dim());
      return std::nullopt;
    }
    std::printf("%s%s\n", m.llm->model().random_weights() ? "NOTICE: answers come from RANDOM weights: " : "llm: ",
                m.llm->model().description().c_str());
  }
  // Cameras on rendered scenes: their frames, and what each frame answers.
  m.truths.resize(spec.cameras.size());
  for (std::size_t i = 0; i < spec.cameras.size(); ++i) {
    if (!connectors::is_scene_folder(spec.cameras[i].source)) continue;
    auto t = connectors::read_scene(spec.cameras[i].source);
    if (!t) {
      std::fprintf(stderr, "error: [camera[%zu]].source: %s\n", i, t.err().message.c_str());
      return std::nullopt;
    }
    m.truths[i] = std::make_shared<const connectors::scene_truth>(std::move(*t));
  }
  for (std::size_t i = 0; i < spec.sinks.size(); ++i) {
    auto f = find_sink_kind(spec.sinks[i].kind)->make(spec.sinks[i], spec.security.curve);  // validate() checked the kind
    if (!f) {
      std::fprintf(stderr, "error: [sink[%zu]]: %s\n", i, f.err().message.c_str());
      return std::nullopt;
    }
    m.outputs.push_back(std::move(*f));
  }
  return m;
}

/// A stage of the running graph, as supervision knows it.
struct stage_id {
  enum class kind { encoder, delivery, answerer, shard, sink, hasher, camera, ingest } what;
  std::string name;  ///< for messages
};

/// The spawned, wired graph.
struct pipeline_graph {
  actors::encoder_actor encoder;
  actors::delivery_actor delivery;
  caf::actor ingest;
  actors::delivery_links routing;
  actors::answerer_actor answerer;  ///< invalid: no language model
  std::vector<actors::sink_actor> sinks;
  std::vector<actors::source_actor> sources;
  std::vector<actors::cache_shard_actor> shards;
  std::vector<actors::hasher_actor> hashers;
  std::shared_ptr<connectors::live_view> view;
  std::unique_ptr<connectors::request_server> requests;
  std::shared_ptr<pipeline_chat> chat;  ///< the HTTP API's way in (with a view)
  std::shared_ptr<actors::ingest_live_counters> ingest_live = std::make_shared<actors::ingest_live_counters>();
  std::map<caf::actor_addr, stage_id> stages;  ///< every stage the runner monitors
  /// Set once a stop was asked for: the encoder then waits on no remote node.
  std::shared_ptr<std::atomic<bool>> stopping = std::make_shared<std::atomic<bool>>(false);
};

/// The edges' counters in Prometheus text: what the ingest refused, by
/// reason, and the request endpoint's questions served and refused.
std::string edge_metrics(pipeline_graph& g) {
  std::string o = "# HELP vlcache_ingest_rejected_total Ingest messages refused, by reason.\n"
                  "# TYPE vlcache_ingest_rejected_total counter\n";
  {
    std::lock_guard<std::mutex> lock(g.ingest_live->mutex);
    for (const auto& [reason, n] : g.ingest_live->rejected)
      o += "vlcache_ingest_rejected_total{reason=\"" + reason + "\"} " + std::to_string(n) + "\n";
  }
  if (g.requests) {
    o += "# HELP vlcache_requests_total Questions on the request endpoint, by outcome.\n"
         "# TYPE vlcache_requests_total counter\n";
    o += "vlcache_requests_total{outcome=\"served\"} " + std::to_string(g.requests->served()) + "\n";
    o += "vlcache_requests_total{outcome=\"refused\"} " + std::to_string(g.requests->rejected()) + "\n";
  }
  return o;
}

/// The HTTP API's limits and defaults, from [view] and [llm].
connectors::chat_endpoint_options chat_options(const pipeline_spec& spec) {
  connectors::chat_endpoint_options o;
  o.limits.max_question_bytes = static_cast<std::size_t>(spec.llm.max_question_bytes);
  o.limits.max_tokens = spec.view.api_max_tokens;
  o.image.max_bytes = static_cast<std::size_t>(spec.view.api_max_image_bytes);
  o.image.max_pixels = spec.view.api_max_image_pixels;
  o.requests_per_s = spec.view.api_requests_per_s;
  o.burst = spec.view.api_burst;
  o.defaults = spec.llm.answer.sampling;
  return o;
}

/// The API's service, named after the language model's folder (or preset).
std::shared_ptr<pipeline_chat> open_chat(const pipeline_spec& spec, caf::actor_system& sys, bool has_llm) {
  std::string model;
  if (has_llm) {
    std::filesystem::path p(spec.llm.model.empty() ? spec.encoder.model : spec.llm.model);
    model = (p.has_filename() ? p.filename() : p.parent_path().filename()).string();
  }
  std::vector<std::string> cameras;
  for (const auto& c : spec.cameras) cameras.push_back(c.name);
  return std::make_shared<pipeline_chat>(sys, model, std::move(cameras), spec.cache.preprocess);
}

/// The live view ([view].http or --http), refused beyond loopback without
/// authentication; with it the HTTP API. Nothing to open is success.
bool open_view(const pipeline_spec& spec, const run_options& options, caf::actor_system& sys, pipeline_probe& probe,
               const loaded_parts& m, pipeline_graph& g) {
  const std::string http = options.http.empty() ? spec.view.http : options.http;
  if (http.empty()) return true;
  if (!binds_loopback_only(http) && !spec.view.authenticated() && !spec.security.insecure) {
    std::fprintf(stderr, "error: --http: binds '%s', beyond loopback, without authentication: set [view] tls_cert, "
                 "tls_key and token_file, or [security] insecure = true\n", bound_host(http).c_str());
    return false;
  }
  // Keys guard the answers on the sockets; a view without a token would hand
  // them to any local process.
  if (spec.security.curve && spec.view.token.empty() && !spec.security.insecure) {
    std::fprintf(stderr, "error: --http: the pipeline's sockets need CURVE keys ([security]), so its view needs "
                 "a token too: set [view] token_file (or [security] insecure = true)\n");
    return false;
  }
  const auto address = parse_host_port(http);
  if (!address) {
    std::fprintf(stderr, "error: --http / [view].http: '%s' is not HOST:PORT\n", http.c_str());
    return false;
  }
  connectors::live_view_options vo;
  vo.host = address->host;
  vo.port = address->port;
  vo.max_view_fps = spec.view.max_view_fps;
  vo.tls_cert = spec.view.tls_cert;
  vo.tls_key = spec.view.tls_key;
  vo.token = spec.view.token;
  g.chat = open_chat(spec, sys, m.llm != nullptr);
  vo.chat = g.chat;
  vo.chat_options = chat_options(spec);
  auto started = connectors::live_view::start(
      vo, spec.name, [&probe, &g] { return to_prometheus(probe.collect()) + edge_metrics(g); },
      [&probe] { return per_stream_json(probe.collect()); });
  if (!started) {
    std::fprintf(stderr, "error: --http / [view].http: %s\n", started.err().message.c_str());
    return false;
  }
  g.view = std::move(*started);
  std::printf("view: live page at %s/ (metrics at /metrics)\n", g.view->address().c_str());
  std::fflush(stdout);
  return true;
}

/// Reaches each [encoder].remote node and checks that it encodes the
/// pipeline's grid; an unreachable node is left to the local fallback when
/// there is one.
bool reach_encoder_nodes(const pipeline_spec& spec, caf::actor_system& sys, caf::scoped_actor& runner,
                         actors::encoder_backend& backend) {
  for (const auto& address : spec.encoder.remote) {
    const auto [host, port] = *parse_host_port(address);  // validated with the spec
    auto node = actors::reach_encoder_node(sys, host, port, spec.encoder.tls.enabled());
    if (!node && spec.encoder.fallback_local) {
      // Frames are encoded here until the node comes up (tried with backoff).
      std::printf("encoder: the node at %s is not reachable (%s); encoding here until it is\n", address.c_str(),
                  sys.render(node.error()).c_str());
      backend.nodes.push_back({actors::encoder_node_actor{}, host, port});
      backend.remote_tls = spec.encoder.tls.enabled();
      continue;
    }
    if (!node) {
      std::fprintf(stderr, "error: [encoder].remote: cannot reach the encoder node at %s: %s\n", address.c_str(),
                   sys.render(node.error()).c_str());
      return false;
    }
    std::string problem;
    runner->request(*node, std::chrono::seconds(10), actors::encoder_info_atom::value)
        .receive(
            [&](const actors::remote_encoder_info& info) {
              std::printf("encoder: remote node %s: %s\n", address.c_str(), info.description.c_str());
              if (info.image_size != spec.cache.grid.image_size || info.patch_size != spec.cache.grid.patch_size)
                problem = "the node at " + address + " encodes " + std::to_string(info.image_size) + "/" +
                          std::to_string(info.patch_size) + " but [input] is " +
                          std::to_string(spec.cache.grid.image_size) + "/" + std::to_string(spec.cache.grid.patch_size);
              backend.num_patches = info.num_patches;
              backend.image_size = info.image_size;
            },
            [&](const caf::error& e) { problem = "the node at " + address + " did not answer: " + sys.render(e); });
    if (!problem.empty()) {
      std::fprintf(stderr, "error: [encoder].remote: %s\n", problem.c_str());
      return false;
    }
    backend.nodes.push_back({*node, host, port});
    backend.remote_tls = spec.encoder.tls.enabled();
  }
  return true;
}

/// The way out of the encoder: sinks (the view among them), the answerer
/// and its router, frame delivery, and the request endpoint.
bool open_answer_path(const pipeline_spec& spec, const run_options& options, caf::actor_system& sys,
                      loaded_parts& m, pipeline_graph& g) {
  if (g.view) m.outputs.push_back(g.view);  // the view keeps the latest answers, as a sink
  for (auto& out : m.outputs) g.sinks.push_back(sys.spawn(actors::sink, out));
  if (m.llm) {
    // The answerer computes for seconds per message: its own thread.
    g.answerer = sys.spawn<caf::detached>(actors::llm_answerer, m.llm,
                                          actors::answerer_settings{spec.llm.question, spec.llm.max_waiting_questions,
                                                                    spec.llm.max_batch,
                                                                    spec.fidelity_control.answer_audit_every},
                                          g.sinks);
    g.routing.answers = sys.spawn(actors::answer_router, g.answerer, spec.llm.policy, spec.llm.keep_kv_current);
  }
  if (g.view)
    g.routing.view = [view = g.view, side = spec.cache.grid.side()](connectors::view_frame f) {
      f.grid_side = side;
      view->offer_frame(std::move(f));
    };
  if (options.on_tokens)
    g.routing.tokens = [tap = options.on_tokens](const actors::frame_tag& t, const tensor_handle& tokens) {
      tap(t.stream_name, t.seq, tokens);
    };
  g.delivery = sys.spawn(actors::delivery, g.sinks, g.routing);
  if (!m.llm || spec.llm.request_endpoint.empty()) return true;
  auto server = connectors::request_server::start(
      spec.llm.request_endpoint,
      [&sys, answers = g.routing.answers](const std::string& stream, const std::string& question) {
        caf::scoped_actor asker{sys};
        std::string reply;
        asker->request(answers, std::chrono::minutes(10), actors::ask_atom::value, stream, question)
            .receive([&](const actors::answer_record& r) { reply = actors::answer_line(r); },
                     [&](const caf::error& e) { reply = nlohmann::json{{"error", actors::error_text(sys, e)}}.dump(); });
        return reply;
      },
      spec.security.curve, static_cast<std::size_t>(spec.llm.max_question_bytes));
  if (!server) {
    std::fprintf(stderr, "error: [llm].request_endpoint: %s\n", server.err().message.c_str());
    return false;
  }
  g.requests = std::move(*server);
  std::printf("llm: questions on demand at %s%s\n", spec.llm.request_endpoint.c_str(),
              spec.security.curve ? " (CURVE)" : "");
  return true;
}

/// The cache: shards over bands of whole patch rows, the encoder (its own
/// thread), and the hasher pool.
bool open_cache(const pipeline_spec& spec, caf::actor_system& sys, actors::encoder_backend backend, pipeline_graph& g) {
  const auto& grid = spec.cache.grid;
  const int rows = grid.side(), count = std::min(spec.flow.shards, rows);
  for (int i = 0; i < count; ++i) {
    const int r0 = rows * i / count, r1 = rows * (i + 1) / count;
    auto gate = reference_gate::make(grid, spec.cache.gate);
    if (!gate) {  // validate() checked the thresholds: not expected
      std::fprintf(stderr, "error: [gate]: %s\n", gate.err().message.c_str());
      return false;
    }
    g.shards.push_back(sys.spawn(actors::cache_shard, std::move(*gate), r0 * rows, r1 * rows));
  }
  auto engine = signature_engine::make(grid, spec.cache.gate.noise_factor.has_value());
  if (!engine) {  // the grid was validated: not expected
    std::fprintf(stderr, "error: [input]: %s\n", engine.err().message.c_str());
    return false;
  }
  const auto shared_engine = std::make_shared<const signature_engine>(std::move(*engine));
  for (int i = 0; i < spec.flow.hashers; ++i) g.hashers.push_back(sys.spawn(actors::hasher, shared_engine));
  actors::encoder_settings es;
  es.batch_tokens = spec.encoder.batch_tokens;
  es.batch_timeout = std::chrono::microseconds(static_cast<long>(spec.encoder.batch_timeout_ms * 1000));
  es.shadow = spec.fidelity;
  es.controller = spec.fidelity_control.controller;
  es.remote_timeout = std::chrono::seconds(spec.encoder.remote_timeout_s);
  es.stopping = g.stopping;
  // The encoder computes for a long time per message: its own thread keeps
  // it from starving the scheduler that decodes, hashes and gates.
  g.encoder = sys.spawn<caf::detached>(actors::encoder, std::move(backend), es, g.delivery);
  // Answer audits run the frame in full in the encoder of this process.
  if (g.answerer && spec.encoder.remote.empty() && spec.fidelity_control.answer_audit_every > 0)
    caf::anon_send(g.answerer, actors::auditor_atom::value, caf::actor_cast<actors::auditor_actor>(g.encoder));
  return true;
}

/// Opens one camera's stages: its planner (hashers -> shards -> drift plan
/// -> encoder), then its source, which links to it. For the configured
/// cameras and for those the ingest opens.
using camera_opener = std::function<actors::source_actor(const actors::source_settings&)>;

camera_opener make_camera_opener(const pipeline_spec& spec, caf::actor_system& sys, caf::scoped_actor& runner,
                                 const pipeline_graph& g) {
  return [&sys, hashers = g.hashers, shards = g.shards, enc = g.encoder,
          monitor = caf::actor_cast<caf::actor>(runner), drift = spec.drift,
          views = spec.cache.views.value_or(view_memory_config{})](const actors::source_settings& ss) {
    auto planner = sys.spawn(actors::frame_planner, actors::planner_settings{ss.name, ss.stream, drift, views},
                             hashers, shards, enc);
    return sys.spawn(actors::camera_source, ss, planner, monitor);
  };
}

/// The [[camera]] entries, stream ids 0..N-1.
void open_cameras(const pipeline_spec& spec, const loaded_parts& m, const camera_opener& open, pipeline_graph& g) {
  for (std::size_t i = 0; i < spec.cameras.size(); ++i) {
    const auto& c = spec.cameras[i];
    actors::source_settings ss;
    ss.name = c.name;
    ss.stream = static_cast<stream_id>(i);
    ss.video = {m.truths[i] ? m.truths[i]->frames_pattern : c.source, c.fps, c.start_frame, c.max_frames, c.timeout_s};
    ss.live = connectors::is_network_source(ss.video.source);
    ss.truth = m.truths[i];
    if (spec.llm.question_by_hand) ss.question = spec.llm.question;
    ss.preprocess = spec.cache.preprocess;
    ss.preprocess.pad_to_square = c.pad_to_square;
    ss.loop = c.loop;
    ss.retries = c.retries;
    ss.max_in_flight = spec.flow.max_in_flight;
    ss.queue = spec.flow.queue;
    ss.policy = spec.flow.policy_by_hand ? spec.flow.policy : ss.live ? drop_policy::drop_oldest : drop_policy::block;
    ss.pace_fps = c.pace_fps;
    g.sources.push_back(open(ss));
  }
}

/// Supervision: the runner monitors a stage, so that one that dies stops the
/// run with a clear message instead of leaving it waiting for frames that
/// will never come.
template <class Handle>
void watch(caf::scoped_actor& runner, pipeline_graph& g, const Handle& a, stage_id id) {
  runner->monitor(a);
  g.stages[a.address()] = std::move(id);
}

void watch_stages(const pipeline_spec& spec, caf::scoped_actor& runner, pipeline_graph& g) {
  using k = stage_id::kind;
  watch(runner, g, g.encoder, {k::encoder, "encoder"});
  watch(runner, g, g.delivery, {k::delivery, "delivery"});
  if (g.answerer) watch(runner, g, g.answerer, {k::answerer, "answerer"});
  if (g.routing.answers) watch(runner, g, g.routing.answers, {k::answerer, "answer router"});
  for (std::size_t i = 0; i < g.shards.size(); ++i)
    watch(runner, g, g.shards[i], {k::shard, "cache shard " + std::to_string(i)});
  for (std::size_t i = 0; i < g.sinks.size(); ++i) watch(runner, g, g.sinks[i], {k::sink, "sink " + std::to_string(i)});
  for (std::size_t i = 0; i < g.hashers.size(); ++i)
    watch(runner, g, caf::actor_cast<caf::actor>(g.hashers[i]), {k::hasher, "hasher " + std::to_string(i)});
  for (std::size_t i = 0; i < g.sources.size(); ++i)
    watch(runner, g, g.sources[i], {k::camera, "camera '" + spec.cameras[i].name + "'"});
}

/// The ZeroMQ ingest ([ingest]): opens a camera's stages per stream that
/// connects, from stream id N on, and ends them when it goes.
void open_ingest(const pipeline_spec& spec, caf::actor_system& sys, caf::scoped_actor& runner,
                 const camera_opener& open, pipeline_graph& g) {
  actors::ingest_settings is;
  is.endpoint = spec.ingest.endpoint;
  is.bind = spec.ingest.bind;
  is.limits = spec.ingest.limits;
  if (spec.security.curve) is.limits.allowed_streams = spec.security.curve->streams;
  is.live = g.ingest_live;
  is.curve = spec.security.curve;
  is.idle_timeout_s = spec.ingest.idle_timeout_s;
  is.max_streams = spec.ingest.max_streams;
  is.stop_when_idle = spec.ingest.stop_when_idle;
  is.first_stream = static_cast<stream_id>(spec.cameras.size());
  is.source.preprocess = spec.cache.preprocess;
  is.source.max_in_flight = spec.flow.max_in_flight;
  is.source.queue = spec.flow.queue;
  // Live cameras cannot be paused: without credit the newest frame goes.
  is.source.policy = spec.flow.policy == drop_policy::block ? drop_policy::drop_newest : spec.flow.policy;
  actors::stream_wiring wiring;
  wiring.open = open;
  wiring.close = [shards = g.shards, enc = g.encoder](stream_id id) {
    for (const auto& shard : shards) caf::anon_send(shard, actors::end_stream_atom::value, id);
    caf::anon_send(enc, actors::end_stream_atom::value, id);
  };
  g.ingest = sys.spawn<caf::detached>(actors::ingest_actor, is, wiring, caf::actor_cast<caf::actor>(runner));
  watch(runner, g, g.ingest, {stage_id::kind::ingest, "ingest"});
}

/// The graph's composition: view, encoder nodes, answer path, cache,
/// cameras, supervision, ingest, then the HTTP API's way in. Errors are
/// printed naming their key.
bool build(const pipeline_spec& spec, const run_options& options, caf::actor_system& sys, caf::scoped_actor& runner,
           pipeline_probe& probe, loaded_parts& m, pipeline_graph& g) {
  if (!open_view(spec, options, sys, probe, m, g)) return false;
  actors::encoder_backend backend;
  backend.local = m.encoder;
  if (!reach_encoder_nodes(spec, sys, runner, backend)) return false;
  if (!open_answer_path(spec, options, sys, m, g)) return false;
  if (!open_cache(spec, sys, std::move(backend), g)) return false;
  const camera_opener open_camera = make_camera_opener(spec, sys, runner, g);
  open_cameras(spec, m, open_camera, g);
  probe.set_stages(g.encoder, g.delivery, g.answerer);
  for (const auto& s : g.sources) probe.add_source(s);
  watch_stages(spec, runner, g);
  if (spec.ingest.enabled) open_ingest(spec, sys, runner, open_camera, g);
  // The API answers from here on (images only with the encoder in this process).
  if (g.chat && g.answerer)
    g.chat->connect(g.routing.answers, g.answerer,
                    spec.encoder.remote.empty() ? caf::actor_cast<actors::auditor_actor>(g.encoder)
                                                : actors::auditor_actor{});
  return true;
}

/// How the run ended.
struct run_outcome {
  std::vector<actors::source_counters> finished;
  double seconds = 0;
  std::string failed_stage;  ///< empty unless a stage died
  actors::ingest_counters ingest;
};

/// One progress line, from the same probe that serves /metrics: live
/// sources, finished ones, the encoder.
void print_progress(pipeline_probe& probe, actors::steady::time_point started) {
  const auto snap = probe.collect(std::chrono::seconds(1));
  std::uint64_t read = 0, encoded = 0, dropped = 0, in_flight = 0;
  for (const auto& c : snap.sources) {
    read += c.read;
    encoded += c.encoded;
    dropped += c.dropped_newest + c.dropped_oldest;
    in_flight += c.in_flight;
  }
  const auto& ec = snap.encoder;
  const double secs = seconds_since(started);
  char tokens[96];
  if (!snap.answered("encoder")) {
    // A busy encoder (a long batch) misses the probe's deadline: say so, never print zeros as figures.
    std::snprintf(tokens, sizeof tokens, "tokens computed unknown (the encoder did not answer within 1 s)");
  } else {
    const double share = ec.share();
    std::snprintf(tokens, sizeof tokens, "tokens computed %.1f%% (hit rate %.1f%%)", 100 * share, 100 * (1 - share));
  }
  std::printf("progress: %.1fs %llu read, %llu encoded (%.2f frames/s), %s, %llu in flight, %llu dropped%s\n", secs,
              static_cast<unsigned long long>(read), static_cast<unsigned long long>(encoded), encoded / secs, tokens,
              static_cast<unsigned long long>(in_flight), static_cast<unsigned long long>(dropped),
              snap.unanswered.size() > static_cast<std::size_t>(!snap.answered("encoder")) ? " (some stages did not answer)" : "");
}

/// Frames still in flight per camera, for the message of a drain cut short.
std::string frames_in_flight(pipeline_probe& probe) {
  const auto snap = probe.collect(std::chrono::seconds(1));
  std::string waiting;
  for (const auto& c : snap.sources)
    if (c.in_flight > 0) waiting += " " + c.name + " (" + std::to_string(c.in_flight) + ")";
  return waiting.empty() ? std::string(" none reported") : waiting;
}

/// Runs until every camera finished (and the ingest stopped), a stage died,
/// or a signal asked for a drain; prints progress from the probe.
run_outcome supervise(const pipeline_spec& spec, const run_options& options, caf::actor_system& sys,
                      caf::scoped_actor& runner, pipeline_probe& probe, pipeline_graph& g, stop_signals& signals) {
  run_outcome out;
  auto& finished = out.finished;
  auto& failed_stage = out.failed_stage;
  auto& ingest_stats = out.ingest;
  auto& sources = g.sources;
  const caf::actor& ingest = g.ingest;
  bool ingest_done = !spec.ingest.enabled;
  std::set<caf::actor_addr> done;  // cameras that sent their final counters: their exit is no failure
  // From here a signal drains the pipeline instead of killing the process;
  // a second one stops waiting for the drain.
  signals.install();
  std::printf("running: %zu camera(s)%s; SIGINT or SIGTERM stops them and drains the frames in flight\n",
              spec.cameras.size(), spec.ingest.enabled ? " and the network ingest" : "");
  std::fflush(stdout);
  const auto started = actors::steady::now();
  bool stopping = false;
  const auto tick = std::chrono::milliseconds(200);
  auto next_progress = started + std::chrono::duration_cast<actors::steady::duration>(
                                     std::chrono::duration<double>(spec.flow.progress_seconds));
  while ((finished.size() < sources.size() || !ingest_done) && failed_stage.empty()) {
    runner->receive(
        [&](actors::eos_atom, const caf::actor_addr& who, const actors::source_counters& c) {
          finished.push_back(c);
          done.insert(who);
          probe.source_finished(c);
        },
        [&](actors::new_stream_atom, const actors::source_actor& source, const std::string& name) {
          sources.push_back(source);
          probe.add_source(source);
          runner->monitor(source);
          g.stages[source.address()] = {stage_id::kind::camera, "camera '" + name + "'"};
          std::printf("ingest: new stream '%s'\n", name.c_str());
        },
        [&](actors::ingest_done_atom, const actors::ingest_counters& c) {
          ingest_done = true;
          ingest_stats = c;
          if (!c.error.empty()) std::fprintf(stderr, "error: [ingest].endpoint: %s\n", c.error.c_str());
        },
        [&](const caf::down_msg& d) {
          const auto it = g.stages.find(d.source);
          if (it == g.stages.end()) return;
          const stage_id& who = it->second;
          // A camera that ended (it sent its counters first) and an ingest
          // that stopped are done, not dead.
          if (who.what == stage_id::kind::camera && done.count(d.source) != 0) return;
          if (who.what == stage_id::kind::ingest && ingest_done) return;
          failed_stage = who.name + " stopped: " + sys.render(d.reason);
        },
        caf::after(tick) >> [] {});
    if (stopping && signals.count() > 1) {
      // Say what the drain still waits for, so a stuck stage can be found.
      failed_stage = "the drain, cut short by a second signal; frames still in flight:" + frames_in_flight(probe);
      break;
    }
    if (signals.count() > 0 && !stopping) {
      stopping = true;
      *g.stopping = true;
      std::printf("stopping: draining frames in flight (a second signal stops waiting)\n");
      for (const auto& s : sources) runner->send(s, actors::stop_atom::value);
      if (ingest) runner->send(ingest, actors::stop_atom::value);
    }
    if (options.progress && spec.flow.progress_seconds > 0 && actors::steady::now() >= next_progress) {
      next_progress += std::chrono::duration_cast<actors::steady::duration>(
          std::chrono::duration<double>(spec.flow.progress_seconds));
      print_progress(probe, started);
    }
  }
  out.seconds = seconds_since(started);
  if (!failed_stage.empty()) std::fprintf(stderr, "error: %s; the pipeline stops\n", failed_stage.c_str());

  return out;
}

/// Asks the answerer for its counters, waiting (up to 5 minutes) for the
/// answers still being computed so the summary counts them.
actors::answerer_counters wait_for_answers(caf::scoped_actor& runner, const actors::answerer_stats_actor& answerer,
                                           const stop_signals& signals) {
  actors::answerer_counters ac;
  const auto give_up = actors::steady::now() + std::chrono::minutes(5);
  const unsigned seen = signals.count();  // a new signal: no more waiting
  do {
    ac.pending = 0;
    runner->request(answerer, std::chrono::minutes(10), actors::stats_atom::value)
        .receive([&](const actors::answerer_counters& c) { ac = c; }, [](const caf::error&) {});
    if (ac.pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (ac.pending > 0 && actors::steady::now() < give_up && signals.count() == seen);
  return ac;
}

void shut_down(caf::scoped_actor& runner, pipeline_graph& g) {
  if (g.chat) g.chat->disconnect();
  for (auto& s : g.sources) runner->send_exit(s, caf::exit_reason::user_shutdown);
  runner->send_exit(g.encoder, caf::exit_reason::user_shutdown);
  g.requests.reset();
  runner->send_exit(g.delivery, caf::exit_reason::user_shutdown);
  if (g.routing.answers) runner->send_exit(g.routing.answers, caf::exit_reason::user_shutdown);
  if (g.answerer) runner->send_exit(g.answerer, caf::exit_reason::user_shutdown);
  for (auto& s : g.shards) runner->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& s : g.sinks) runner->send_exit(s, caf::exit_reason::user_shutdown);
  for (auto& h : g.hashers) runner->send_exit(h, caf::exit_reason::user_shutdown);
  if (g.ingest) runner->send_exit(g.ingest, caf::exit_reason::user_shutdown);
}

/// What the summary is made from: the run's outcome, the answers still
/// being computed (audits first: their outcome reaches the encoder's
/// counters), then the final counts of every stage.
run_facts collect_facts(const pipeline_spec& spec, const vision_encoder* encoder, caf::scoped_actor& runner,
                        pipeline_probe& probe, pipeline_graph& g, const run_outcome& outcome,
                        const stop_signals& signals) {
  run_facts facts;
  facts.pipeline = spec.name;
  facts.seconds = outcome.seconds;
  for (const auto& node : spec.encoder.remote)
    facts.encoder_remote += (facts.encoder_remote.empty() ? "" : ", ") + node;
  if (encoder != nullptr) {
    facts.random_weights = encoder->random_weights();
    facts.state_bytes = encoder->state_bytes();
  }
  if (g.answerer) facts.answers = wait_for_answers(runner, g.answerer, signals);
  facts.final = probe.collect(std::chrono::seconds(5));
  for (const auto& stage : facts.final.unanswered)
    std::fprintf(stderr, "warning: the %s did not answer the final count within 5 s; its figures below are missing\n",
                 stage.c_str());
  facts.finished = outcome.finished;
  for (const auto& c : spec.cameras) {
    facts.pace_fps += c.pace_fps;
    facts.paced_cameras += c.pace_fps > 0;
  }
  if (spec.ingest.enabled) facts.ingest = outcome.ingest;
  if (g.requests) facts.requests = std::make_pair(g.requests->served(), g.requests->rejected());
  return facts;
}

/// Keeps the live view up with the final numbers for `hold` seconds (a
/// new signal ends it), then stops it.
void hold_view(connectors::live_view& view, double hold, const stop_signals& signals) {
  if (hold > 0) {
    std::printf("view: serving the final numbers for %.0f s more (Ctrl-C ends it)\n", hold);
    std::fflush(stdout);
    const unsigned seen = signals.count();
    const auto until = actors::steady::now() + std::chrono::duration_cast<actors::steady::duration>(
                                                   std::chrono::duration<double>(hold));
    while (actors::steady::now() < until && signals.count() == seen)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  view.stop();
}

/// A file camera that could not be opened, or a camera whose every frame
/// failed, fails the run (the others ran to their end). A network camera
/// that never answered is retried as configured and is not an error here.
int report_failed_cameras(const pipeline_spec& spec, const std::vector<actors::source_counters>& finished) {
  int failed = 0;
  for (const auto& c : finished) {
    const auto cam = std::find_if(spec.cameras.begin(), spec.cameras.end(),
                                  [&](const camera_spec& k) { return k.name == c.name; });
    const bool network = cam != spec.cameras.end() && connectors::is_network_source(cam->source);
    if (c.read == 0 && !c.error.empty() && !network) {
      std::fprintf(stderr, "error: camera '%s' could not be read: %s\n", c.name.c_str(), c.error.c_str());
      ++failed;
    } else if (c.read > 0 && c.encoded == 0 && c.failed > 0) {
      std::fprintf(stderr, "error: camera '%s': all %llu frames it read failed (the lines above say why)\n",
                   c.name.c_str(), static_cast<unsigned long long>(c.read));
      ++failed;
    }
  }
  return failed;
}

}  // namespace

int run_pipeline(const pipeline_spec& spec, const run_options& options) {
  if (auto errors = validate(spec); !errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "error: %s\n", e.c_str());
    return 1;
  }
  auto parts = load_parts(spec);
  if (!parts) return 1;

  // Declared before the actor system: they outlive its teardown.
  stop_signals signals;
  teardown_watchdog watchdog;
  caf::actor_system_config cfg;
  actors::register_error_category(cfg);
  cfg.set("scheduler.max-threads", static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  cfg.set("logger.console", caf::atom("none"));
  actors::announce_remote_types(cfg);
  actors::configure_link(cfg, spec.encoder.tls);
  caf::actor_system sys{cfg};
  caf::scoped_actor runner{sys};
  pipeline_probe probe(sys, spec.name);
  probe.set_insecure(spec.security.insecure);
  if (spec.security.insecure)
    std::fprintf(stderr, "NOTICE: [security] insecure = true: endpoints beyond loopback are served WITHOUT "
                         "authentication or encryption\n");
  pipeline_graph g;
  if (!build(spec, options, sys, runner, probe, *parts, g)) return 1;

  auto outcome = supervise(spec, options, sys, runner, probe, g, signals);

  const auto summary = summarize(collect_facts(spec, parts->encoder.get(), runner, probe, g, outcome, signals));
  probe.mark_ended();
  if (g.view) g.view->mark_ended();
  if (!options.summary_json.empty()) {
    std::ofstream f(options.summary_json);
    if (!f) std::fprintf(stderr, "error: cannot write '%s'\n", options.summary_json.c_str());
    else f << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (g.view) hold_view(*g.view, options.hold_s >= 0 ? options.hold_s : spec.view.hold_s, signals);
  const int failed_cameras = report_failed_cameras(spec, outcome.finished);
  const bool clean = summary["accounted"].get<bool>() && summary["out_of_order"].get<std::uint64_t>() == 0 &&
                     outcome.failed_stage.empty() && failed_cameras == 0;
  const int code = clean ? 0 : 1;
  // Everything is counted and written: stopping the actors may not hang the process.
  watchdog.arm("stopping the actors", std::chrono::seconds(20), signals, code);
  shut_down(runner, g);
  return code;
}

}  // namespace vlcache::graph
