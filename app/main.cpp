// vlcache: the command-line entry point; a thin layer over the libraries.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/ask_command.hpp"
#include "app/bench_answers.hpp"
#include "app/bench_encoder.hpp"
#include "app/bench_llm.hpp"
#include "app/tune_command.hpp"
#include "app/camera_command.hpp"
#include "app/client_keys.hpp"
#include "app/encode_command.hpp"
#include "app/scan_command.hpp"
#include "app/scene_command.hpp"
#include "connectors/library_logs.hpp"
#include "connectors/request_endpoint.hpp"
#include "connectors/zmq_listener.hpp"
#include "graph/encoder_node.hpp"
#include "graph/pipeline_runner.hpp"
#include "graph/pipeline_spec.hpp"

int main(int argc, char** argv) {
  // Line by line even into a file: a process that is killed keeps its log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"vlcache: ask a vision-language model about live camera streams, cheaply"};
  app.require_subcommand(1);
  // Given before or after the subcommand's name: `vlcache run x.toml --verbose`.
  app.fallthrough();
  bool verbose = false;
  app.add_flag("--verbose,-v", verbose, "Let OpenCV and FFmpeg print their own warnings (quiet by default)");
  vlcache::app::scan_options scan;
  vlcache::app::add_scan_command(app, scan);
  vlcache::app::encode_options encode;
  vlcache::app::add_encode_command(app, encode);
  vlcache::app::ask_options ask;
  vlcache::app::add_ask_command(app, ask);
  vlcache::app::scene_options scene;
  vlcache::app::add_scene_command(app, scene);
  std::string validate_file;
  auto* validate = app.add_subcommand("validate", "Check a pipeline TOML; print every error, exit non-zero on any");
  validate->add_option("file", validate_file, "Pipeline TOML")->required();
  std::string run_file;
  vlcache::graph::run_options run_opts;
  auto* run = app.add_subcommand("run", "Run a pipeline defined in TOML");
  run->add_option("file", run_file, "Pipeline TOML")->required();
  run->add_option("--summary-json", run_opts.summary_json, "Write the run summary as JSON");
  run->add_option("--http", run_opts.http, "HOST:PORT: serve the live view, /metrics and /healthz (or [view].http)");
  run->add_option("--http-hold-s", run_opts.hold_s, "Keep serving this long after the run ends (or [view].hold_s)");
  vlcache::graph::encoder_node_options node_opts;
  std::string node_role = "encoder";
  auto* node = app.add_subcommand("node", "Serve a pipeline stage to other machines (CAF remote actor)");
  node->add_option("--role", node_role, "The stage: encoder")->check(CLI::IsMember({"encoder"}))->default_val("encoder");
  node->add_option("--listen", node_opts.port, "Port to listen on")->required();
  node->add_option("--host", node_opts.host, "Address to listen on")->default_val("127.0.0.1");
  node->add_flag("--insecure", node_opts.insecure, "Allow a --host beyond loopback without TLS");
  node->add_option("--tls-cert", node_opts.tls.cert, "TLS: the node's certificate (PEM)");
  node->add_option("--tls-key", node_opts.tls.key, "TLS: its private key (PEM)");
  node->add_option("--tls-ca", node_opts.tls.ca, "TLS: the CA that signed the pipelines' certificates (PEM)");
  node->add_option("--model", node_opts.model, "Hugging Face folder or preset")->default_val("vit-b16");
  node->add_option("--device", node_opts.options.device, "cpu or cuda[:N]")->default_val("cpu");
  node->add_option("--dtype", node_opts.options.dtype, "f32, f16, bf16")->default_val("f32");
  node->add_option("--threads", node_opts.options.threads, "Intra-op threads (0: all cores)")->default_val(0);
  double node_budget_mb = 1024;
  node->add_option("--store-budget-mb", node_budget_mb,
                   "Bytes of token stores the node holds for all its pipelines; past it, the least recently used "
                   "stream's store is given up (its next frame runs in full)")
      ->default_val(1024.0)
      ->check(CLI::Range(1.0, 1e7));
  node->add_option("--store-dtype", node_opts.options.store_dtype, "Token store keys and values: f32, f16 or i8")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "f16", "i8"}));
  node->add_option("--weight-dtype", node_opts.options.weight_dtype,
                   "The layers' weights in the CPU kernels: f32 or f16 (half the bytes)")
      ->default_val("f32")
      ->check(CLI::IsMember({"f32", "f16"}));
  node->add_option("--layer-tolerance", node_opts.options.layer_tolerance,
                   "Layer-wise recompute tolerance, as [encoder] layer_tolerance (0: off)")
      ->default_val(0.0)
      ->check(CLI::NonNegativeNumber);
  node->add_option("--attention-tolerance", node_opts.options.attention_tolerance,
                   "Layer-wise recompute's attention-output test, as [encoder] attention_tolerance (default: the "
                   "layer tolerance; 0: not tested)")
      ->check(CLI::NonNegativeNumber);
  vlcache::app::camera_options camera;
  vlcache::app::add_camera_command(app, camera);
  vlcache::connectors::listen_options listen_opts;
  auto* listen = app.add_subcommand("listen", "Print the lines a pipeline's zmq sink publishes");
  listen->add_option("endpoint", listen_opts.endpoint, "HOST:PORT (or tcp://HOST:PORT) of the zmq sink")->required();
  listen->add_option("--stream", listen_opts.streams, "Only these streams (topic prefixes; repeat or comma-separate)")
      ->delimiter(',');
  listen->add_option("--count", listen_opts.count, "Exit after N lines (0: never)")->default_val(0);
  listen->add_option("--each", listen_opts.each, "Exit once every --stream delivered N lines (0: off)")->default_val(0);
  listen->add_option("--timeout-s", listen_opts.timeout_s, "Fail if the count is not reached in time (0: never)")->default_val(0.0);
  vlcache::app::client_key_paths listen_keys, request_keys;
  vlcache::app::add_client_key_options(listen, listen_keys);
  std::string request_endpoint, request_stream, request_question;
  double request_timeout = 120;
  auto* request = app.add_subcommand("request", "Ask a running pipeline about a stream's latest frame");
  request->add_option("endpoint", request_endpoint, "HOST:PORT (or tcp://HOST:PORT) of [llm].request_endpoint")
      ->required();
  request->add_option("--stream", request_stream, "Camera (stream) name")->required();
  request->add_option("--question", request_question, "The question")->required();
  request->add_option("--timeout-s", request_timeout, "Wait this long for the answer once connected")
      ->default_val(120.0);
  double request_connect_timeout = 3;
  request->add_option("--connect-timeout-s", request_connect_timeout, "Give up connecting after this long")
      ->default_val(3.0);
  vlcache::app::add_client_key_options(request, request_keys);
  std::string keygen_stem;
  vlcache::app::add_keygen_command(app, keygen_stem);
  auto* bench = app.add_subcommand("bench", "Benchmarks on real video (programs, not tests)");
  bench->require_subcommand(1);
  vlcache::app::bench_encoder_options bench_encoder;
  vlcache::app::add_bench_encoder_command(*bench, bench_encoder);
  vlcache::app::bench_llm_options bench_llm;
  vlcache::app::add_bench_llm_command(*bench, bench_llm);
  vlcache::app::bench_answers_options bench_answers;
  vlcache::app::add_bench_answers_command(*bench, bench_answers);
  vlcache::app::tune_options tune;
  vlcache::app::add_tune_command(app, tune);
  CLI11_PARSE(app, argc, argv);
  vlcache::connectors::set_library_logs(verbose);
  if (app.got_subcommand("tune")) return vlcache::app::run_tune(tune);
  if (app.got_subcommand("scan")) return vlcache::app::run_scan(scan);
  if (app.got_subcommand("ask")) return vlcache::app::run_ask(ask);
  if (app.got_subcommand("keygen")) return vlcache::app::run_keygen(keygen_stem);
  if (request->parsed()) {
    auto keys = vlcache::app::load_client_keys(request_keys);
    if (!keys) {
      std::fprintf(stderr, "error: %s\n", keys.err().message.c_str());
      return 1;
    }
    auto reply = vlcache::connectors::ask_endpoint(request_endpoint, request_stream, request_question, request_timeout,
                                                   *keys, request_connect_timeout);
    if (!reply) {
      std::fprintf(stderr, "error: %s\n", reply.err().message.c_str());
      return 1;
    }
    std::printf("%s\n", reply->c_str());
    return reply->rfind("{\"error\"", 0) == 0 ? 1 : 0;
  }
  if (run->parsed()) {
    const auto r = vlcache::graph::load_pipeline(run_file);
    for (const auto& e : r.errors) std::fprintf(stderr, "%s\n", e.c_str());
    if (!r.ok()) return 1;
    return vlcache::graph::run_pipeline(r.spec, run_opts);
  }
  if (app.got_subcommand("camera")) return vlcache::app::run_camera(camera);
  if (app.got_subcommand("scene")) return vlcache::app::run_scene(scene);
  if (node->parsed()) {
    node_opts.options.store_budget.capacity_bytes = static_cast<std::uint64_t>(node_budget_mb * (1 << 20));
    return vlcache::graph::run_encoder_node(node_opts);
  }
  if (listen->parsed()) {
    auto keys = vlcache::app::load_client_keys(listen_keys);
    if (!keys) {
      std::fprintf(stderr, "error: %s\n", keys.err().message.c_str());
      return 1;
    }
    listen_opts.curve = *keys;
    listen_opts.on_connected = [&listen_opts] {
      std::fprintf(stderr, "listen: connected to %s\n", listen_opts.endpoint.c_str());
    };
    auto n = vlcache::connectors::listen(listen_opts, [](const std::string& topic, const std::string& line) {
      std::printf("%s %s\n", topic.c_str(), line.c_str());
      std::fflush(stdout);
    });
    if (!n) {
      std::fprintf(stderr, "error: %s\n", n.err().message.c_str());
      return 1;
    }
    return 0;
  }
  if (validate->parsed()) {
    const auto r = vlcache::graph::load_pipeline(validate_file);
    for (const auto& e : r.errors) std::fprintf(stderr, "%s\n", e.c_str());
    if (!r.ok()) return 1;
    const auto unreadable = vlcache::graph::check_camera_files(r.spec);
    for (const auto& e : unreadable) std::fprintf(stderr, "%s: %s\n", validate_file.c_str(), e.c_str());
    if (!unreadable.empty()) return 1;
    std::printf("%s: valid: %zu camera(s), model %s, %d/%d grid\n", validate_file.c_str(), r.spec.cameras.size(),
                r.spec.encoder.model.c_str(), r.spec.cache.grid.image_size, r.spec.cache.grid.patch_size);
    return 0;
  }
  if (app.got_subcommand("encode")) return vlcache::app::run_encode(encode);
  if (bench->got_subcommand("encoder")) return vlcache::app::run_bench_encoder(bench_encoder);
  if (bench->got_subcommand("llm")) return vlcache::app::run_bench_llm(bench_llm);
  if (bench->got_subcommand("answers")) return vlcache::app::run_bench_answers(bench_answers);
  return 2;
}
