#pragma once
/// \file
/// A whole pipeline as plain data: cameras, the cache, drift control, the
/// encoder, flow control and sinks. Built from TOML (every error names its
/// key) or in code; `vlcache validate FILE` prints every error at once.
/// Every key, its type, default and meaning: configs/reference.toml.

#include <filesystem>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "core/cache/answer_policy.hpp"
#include "core/models/answerer.hpp"
#include "core/cache/drift_policy.hpp"
#include "core/cache/fidelity_controller.hpp"
#include "core/base/flow_limiter.hpp"
#include "core/cache/shadow_check.hpp"
#include "core/models/vision_encoder.hpp"
#include "graph/model_input.hpp"
#include "graph/cache_spec.hpp"
#include "actors/remote_encoder.hpp"
#include "connectors/curve_keys.hpp"
#include "connectors/peer_limits.hpp"
#include "graph/sink_registry.hpp"

namespace vlcache::graph {

struct camera_spec {
  std::string name;
  std::string source;        ///< video file, image sequence pattern, or URL
  double fps = 0.0;          ///< sampling rate; 0 = every frame
  double pace_fps = 0.0;     ///< read at this rate, as a live camera delivers; 0 = as fast as credits allow
  std::uint64_t start_frame = 0;
  std::uint64_t max_frames = 0;  ///< 0 = until the source ends
  bool loop = false;         ///< reopen a file source at its end
  int retries = 3;           ///< reopen attempts after a failure (-1: forever)
  double timeout_s = 5.0;    ///< network sources: connect and per-frame timeout
  bool pad_to_square = false;
};


struct flow_spec {
  int max_in_flight = 4;  ///< frames per camera between decode and the sinks
  /// Set by hand for every camera; otherwise a file camera blocks (reads
  /// no faster than the pipeline takes frames: none dropped) and a network
  /// camera drops its oldest frame (it cannot wait).
  drop_policy policy = drop_policy::drop_oldest;
  bool policy_by_hand = false;
  int queue = 2;          ///< frames a camera holds back before its drop policy acts
  int hashers = 2;
  int shards = 2;
  double progress_seconds = 2.0;
};

struct encoder_spec {
  std::string model = shipped_model();  ///< preset or LLaVA folder; by default the one that answers
  /// HOST:PORT of each `vlcache node --role encoder`; streams are spread over
  /// them. Empty: the model runs in this process.
  std::vector<std::string> remote;
  int remote_timeout_s = 30;  ///< a batch the node has not answered by then fails (a dead node: at once)
  /// While no node can take a stream's frames, encode them in this process
  /// (`fallback = "local"`: the model is loaded here too) instead of
  /// failing them.
  bool fallback_local = false;
  actors::link_tls tls;       ///< tls_cert, tls_key, tls_ca: mutual TLS with the node
  encoder_options options;
  /// A fidelity profile (`vlcache tune`); empty: the model folder's
  /// vlcache-profile.toml when there is one, else the built-in ladder.
  std::string profile;
  /// Keys set by hand: the profile and the controller never move them.
  bool tolerance_by_hand = false, attention_by_hand = false, weight_dtype_by_hand = false,
       store_dtype_by_hand = false;
  int batch_tokens = 256;     ///< run a batch once this many tokens wait
  double batch_timeout_ms = 20.0;
};

/// Cameras on the network: camera nodes push frames over ZeroMQ.
struct ingest_spec {
  bool enabled = false;
  std::string endpoint;       ///< tcp://HOST:PORT
  bool bind = true;           ///< bind (camera nodes connect) or connect
  double idle_timeout_s = 5.0;  ///< a stream silent this long is closed
  int max_streams = 64;
  bool stop_when_idle = false;  ///< end the run once every stream seen has closed
  peer_limits_config limits;    ///< per camera node: max_frame_mb, max_fps_per_peer, max_streams_per_peer
};

/// The language model that answers questions about the frames.
struct llm_spec {
  bool enabled = false;
  std::string model;      ///< preset or LLaVA folder; empty: [encoder].model
  std::string tokenizer;  ///< sentencepiece model; empty: the folder's tokenizer.model
  std::string question = "What is happening in this frame?";
  bool question_by_hand = false;  ///< set: asked of scene cameras too, instead of their own questions
  answer_options answer;  ///< template, sampling, KV reuse
  answer_policy_config policy{10, 0.0, true};
  std::string request_endpoint;  ///< tcp://HOST:PORT: a REP socket for on-demand questions
  int max_question_bytes = 4000; ///< longer questions on the request endpoint and the API are refused
  int max_waiting_questions = 16; ///< on-demand questions queued at the answerer; more are refused (busy)
  int max_batch = 4;             ///< streams answered together in one pass
  bool keep_kv_current = false;  ///< frames between answers update the streams' image K/V
  llm_options options;
};

/// The live web view and /metrics.
struct view_spec {
  std::string http;          ///< HOST:PORT; empty: no web server
  double max_view_fps = 2.0; ///< frames per camera the view takes per second
  double hold_s = 0.0;       ///< keep serving this long after the run ends (final numbers)
  std::string tls_cert, tls_key;  ///< HTTPS (PEM files); empty: HTTP
  std::string token_file;         ///< a file holding the bearer token; empty: no token
  std::string token;              ///< read from token_file
  /// The OpenAI-style API (/v1/...): limits per client.
  double api_requests_per_s = 2.0;
  double api_burst = 4.0;
  std::int64_t api_max_image_bytes = std::int64_t{8} << 20;
  std::int64_t api_max_image_pixels = std::int64_t{4096} * 4096;
  int api_max_tokens = 256;
  /// Both HTTPS and a token: the view may be served beyond loopback.
  [[nodiscard]] bool authenticated() const { return !tls_cert.empty() && !token.empty(); }
};

/// [security]: who may reach the pipeline's ZeroMQ sockets (CURVE).
struct security_spec {
  std::string secret_key;       ///< the pipeline's .key file (vlcache keygen)
  std::string allowed_clients;  ///< a folder of client .pub files, or one file of public-key lines
  bool insecure = false;        ///< allow binding beyond loopback without authentication
  std::optional<connectors::curve_server_keys> curve;  ///< loaded from the two files
};

/// [fidelity] beyond the shadow checks: the target, and the controller
/// that holds it per camera (core/cache/fidelity_controller).
struct fidelity_spec {
  fidelity_target target;
  bool target_by_hand = false;  ///< [fidelity].target set: a profile's calibrated target does not replace it
  bool control = true;          ///< move each camera along the ladder (off: the start rung stays)
  /// Every N-th answer of a camera is also answered from a full recompute
  /// when the answerer is idle (in-process encoder only); 0 = off.
  int answer_audit_every = 20;
  std::string profile;          ///< the profile in use (absolute path); empty: the built-in ladder
  /// Resolved from the profile and the hand-set keys: set when the encoder
  /// runs layer-wise with a tolerance nobody set by hand.
  std::optional<controller_config> controller;
};

struct pipeline_spec {
  std::string name = "pipeline";
  std::vector<camera_spec> cameras;
  ingest_spec ingest;
  cache_spec cache;
  drift_config drift;
  encoder_spec encoder;
  llm_spec llm;
  view_spec view;
  security_spec security;
  flow_spec flow;
  shadow_config fidelity;  ///< [fidelity]: online checks against the full forward
  fidelity_spec fidelity_control;  ///< [fidelity]: the target and its controller
  std::vector<sink_spec> sinks;
};

struct pipeline_result {
  pipeline_spec spec;
  std::vector<std::string> errors;
  [[nodiscard]] bool ok() const noexcept { return errors.empty(); }
};

/// Parses and validates; file paths are checked to exist (URLs are not),
/// the model must be a preset or a folder with a config.json, and the
/// encoder's input must match the [input] grid when the model is a preset.
/// Relative paths are read against `base` (the config file's folder; empty:
/// the working directory) and held absolute in the spec.
[[nodiscard]] pipeline_result parse_pipeline(std::string_view toml_text, const std::string& origin,
                                             const std::filesystem::path& base = {});

/// The host of tcp://HOST:PORT or HOST:PORT; whether it is this machine only
/// (127.x, localhost, ::1; ipc:// and inproc:// too).
[[nodiscard]] std::string bound_host(const std::string& endpoint);
[[nodiscard]] bool binds_loopback_only(const std::string& endpoint);
[[nodiscard]] bool is_loopback_host(const std::string& host);
/// Reads `path` and parses it with its own folder as the base of relative paths.
[[nodiscard]] pipeline_result load_pipeline(const std::string& path);

/// Opens every file camera as `run` would and reads its first frame (for
/// `vlcache validate`; network cameras are not dialled): one error per
/// camera that cannot be read, naming its key and file.
[[nodiscard]] std::vector<std::string> check_camera_files(const pipeline_spec& spec);

/// Checks a spec built in code the same way a parsed one is checked.
[[nodiscard]] std::vector<std::string> validate(const pipeline_spec& spec);

}  // namespace vlcache::graph
