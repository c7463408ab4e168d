#include "graph/pipeline_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>

#include "connectors/scene_video.hpp"
#include "connectors/video_reader.hpp"
#include "core/models/clip_config.hpp"
#include "core/base/device_names.hpp"
#include "core/base/stream_name.hpp"
#include "graph/fidelity_profile.hpp"
#include "graph/host_port.hpp"
#include "graph/model_input.hpp"
#include "graph/table_reader.hpp"

namespace vlcache::graph {

namespace {

bool is_url(const std::string& s) { return s.find("://") != std::string::npos; }

/// Why `m` (neither a preset nor a folder with config.json) is no model.
std::string not_a_model(const std::string& m) {
  const auto abs = std::filesystem::absolute(m).string();
  if (std::filesystem::is_directory(m)) return "folder " + abs + " has no config.json (a model folder holds config.json and model.safetensors)";
  if (std::filesystem::exists(m)) return abs + " is a file; a model is a folder with config.json, or a preset (" + preset_names + ")";
  return "no folder " + abs + " (nor a preset of that name: " + preset_names + ")";
}

/// A model is a preset name or a folder, read against the config's folder.
std::optional<std::string> model_path(table_reader& r, const std::string& key) {
  auto v = r.string(key);
  if (!v || v->empty() || is_preset_name(*v)) return v;
  return r.path(key);
}

void read_pipeline(table_reader& r, pipeline_spec& s) {
  s.name = r.string("name").value_or(s.name);
  auto& f = s.flow;
  f.max_in_flight = static_cast<int>(r.integer("max_in_flight", 1, 1024).value_or(f.max_in_flight));
  f.queue = static_cast<int>(r.integer("queue", 0, 1024).value_or(f.queue));
  f.hashers = static_cast<int>(r.integer("hashers", 1, 64).value_or(f.hashers));
  f.shards = static_cast<int>(r.integer("shards", 1, 64).value_or(f.shards));
  f.progress_seconds = r.number("progress_seconds", 0.0, 3600.0).value_or(f.progress_seconds);
  if (auto p = r.string("drop_policy")) {
    f.policy_by_hand = true;
    if (*p == "drop_oldest") f.policy = drop_policy::drop_oldest;
    else if (*p == "drop_newest") f.policy = drop_policy::drop_newest;
    else if (*p == "block") f.policy = drop_policy::block;
    else r.fail("drop_policy", "'" + *p + "' (drop_oldest, drop_newest or block)");
  }
}

void read_drift(table_reader& r, drift_config& d) {
  d.refresh_interval = static_cast<int>(r.integer("refresh_interval", 0, 1 << 30).value_or(0));
  d.max_token_age = static_cast<int>(r.integer("max_token_age", 0, 1 << 30).value_or(0));
  d.changed_share_budget = r.number("changed_share_budget", 0.0, 1e6).value_or(0.0);
  d.max_tokens_per_frame = static_cast<int>(r.integer("max_tokens_per_frame", 0, 1 << 20).value_or(0));
}

void read_encoder(table_reader& r, encoder_spec& e) {
  e.model = model_path(r, "model").value_or(e.model);
  e.remote = r.strings("remote");
  if (e.remote.size() == 1 && e.remote[0].empty()) e.remote.clear();  // remote = "": in this process
  e.remote_timeout_s = static_cast<int>(r.integer("remote_timeout_s", 1, 3600).value_or(e.remote_timeout_s));
  for (const auto& node : e.remote) {
    if (!parse_host_port(node)) r.fail("remote", "'" + node + "' is not HOST:PORT");
  }
  if (std::set<std::string>(e.remote.begin(), e.remote.end()).size() != e.remote.size())
    r.fail("remote", "a node is listed twice");
  if (auto f = r.string("fallback")) {
    if (*f == "local") e.fallback_local = true;
    else if (*f != "none") r.fail("fallback", "'" + *f + "' (local or none)");
    if (e.remote.empty() && e.fallback_local) r.fail("fallback", "is for a remote encoder: set remote as well");
  }
  e.tls.cert = r.path("tls_cert").value_or("");
  e.tls.key = r.path("tls_key").value_or("");
  e.tls.ca = r.path("tls_ca").value_or("");
  for (const auto& [key, path] : {std::pair<const char*, std::string>{"tls_cert", e.tls.cert},
                                  {"tls_key", e.tls.key}, {"tls_ca", e.tls.ca}}) {
    if (path.empty() && e.tls.enabled() + !e.tls.key.empty() + !e.tls.ca.empty() > 0)
      r.fail(key, "missing: TLS to the node needs tls_cert, tls_key and tls_ca");
    else if (!path.empty() && !std::filesystem::is_regular_file(path))
      r.fail(key, "file '" + path + "' does not exist");
    else if (!path.empty() && e.remote.empty())
      r.fail(key, "TLS is for the link to a remote encoder: set remote as well");
  }
  e.options.device = r.string("device").value_or(e.options.device);
  e.options.dtype = r.string("dtype").value_or(e.options.dtype);
  e.options.threads = static_cast<int>(r.integer("threads", 0, 1024).value_or(0));
  const auto tolerance = r.number("layer_tolerance", 0.0, 1e6);
  e.tolerance_by_hand = tolerance.has_value();
  e.options.layer_tolerance = tolerance.value_or(0.0);
  if (auto a = r.number("attention_tolerance", 0.0, 1e6)) {
    e.options.attention_tolerance = *a;
    e.attention_by_hand = true;
    if (*a > 0 && e.tolerance_by_hand && e.options.layer_tolerance <= 0)
      r.fail("attention_tolerance", "tests reused tokens of layer-wise recompute: set layer_tolerance > 0 as well");
  }
  for (auto [key, value, by_hand] :
       {std::tuple<const char*, std::string*, bool*>{"store_dtype", &e.options.store_dtype, &e.store_dtype_by_hand},
        {"weight_dtype", &e.options.weight_dtype, &e.weight_dtype_by_hand}}) {
    auto v = r.string(key);
    *by_hand = v.has_value();
    *value = v.value_or("f32");
    if (std::string_view(key) == "store_dtype") {
      if (auto p = parse_store_precision(*value); !p) r.fail(key, p.err().message);
    } else if (auto half = parse_half_name(*value); !half) {
      r.fail(key, half.err().message);
    }
  }
  e.profile = r.path("profile").value_or("");
  if (!e.profile.empty() && !std::filesystem::is_regular_file(e.profile))
    r.fail("profile", "file " + e.profile + " does not exist");
  e.batch_tokens = static_cast<int>(r.integer("batch_tokens", 1, 1 << 20).value_or(e.batch_tokens));
  e.batch_timeout_ms = r.number("batch_timeout_ms", 0.0, 60000.0).value_or(e.batch_timeout_ms);
}

void read_llm(table_reader& r, llm_spec& l) {
  l.enabled = r.boolean("enabled").value_or(true);
  l.model = model_path(r, "model").value_or("");
  l.tokenizer = r.path("tokenizer").value_or("");
  l.question_by_hand = r.string("question").has_value();
  l.question = r.string("question").value_or(l.question);
  auto& a = l.answer;
  a.prompt_template = r.string("template").value_or(a.prompt_template);
  if (a.prompt_template.find("{question}") == std::string::npos)
    r.fail("template", "'" + a.prompt_template + "' has no {question}");
  a.sampling.max_new_tokens = static_cast<int>(r.integer("max_new_tokens", 1, 1 << 16).value_or(32));
  a.sampling.temperature = r.number("temperature", 0.0, 100.0).value_or(0.0);
  a.sampling.top_p = r.number("top_p", 0.0, 1.0).value_or(1.0);
  a.sampling.seed = static_cast<std::uint64_t>(r.integer("seed", 0, 1ll << 62).value_or(0));
  a.reuse.enabled = r.boolean("kv_reuse").value_or(true);
  a.reuse.recompute_first = static_cast<int>(r.integer("recompute_first", 0, 1 << 20).value_or(a.reuse.recompute_first));
  a.reuse.recompute_last = static_cast<int>(r.integer("recompute_last", 0, 1 << 20).value_or(0));
  a.reuse.recompute_deviation = static_cast<int>(r.integer("recompute_deviation", 0, 1 << 20).value_or(0));
  a.reuse.change_tolerance = r.number("change_tolerance", 0.0, 1e6).value_or(a.reuse.change_tolerance);
  a.reuse.full_every = static_cast<int>(r.integer("full_every", 0, 1 << 30).value_or(0));
  l.policy.every_n_frames = static_cast<int>(r.integer("every_n_frames", 0, 1 << 30).value_or(l.policy.every_n_frames));
  l.policy.change_threshold = r.number("change_threshold", 0.0, 1.0).value_or(0.0);
  l.policy.first_frame = r.boolean("first_frame").value_or(true);
  l.request_endpoint = r.string("request_endpoint").value_or("");
  l.max_question_bytes = static_cast<int>(r.integer("max_question_bytes", 1, 1 << 20).value_or(l.max_question_bytes));
  l.max_waiting_questions =
      static_cast<int>(r.integer("max_waiting_questions", 1, 4096).value_or(l.max_waiting_questions));
  l.max_batch = static_cast<int>(r.integer("max_batch", 1, 64).value_or(l.max_batch));
  l.keep_kv_current = r.boolean("keep_kv_current").value_or(false);
  if (l.keep_kv_current && !a.reuse.enabled)
    r.fail("keep_kv_current", "needs kv_reuse = true: without reuse every answer prefills in full");
  else if (l.keep_kv_current)
    if (auto st = answerer::updatable(a.prompt_template); !st) r.fail("keep_kv_current", st.err().message);
  if (!l.request_endpoint.empty() && l.request_endpoint.find("://") == std::string::npos)
    r.fail("request_endpoint", "'" + l.request_endpoint + "' is not a ZeroMQ endpoint (tcp://HOST:PORT)");
  l.options.device = r.string("device").value_or("cpu");
  l.options.dtype = r.string("dtype").value_or("f32");
  l.options.threads = static_cast<int>(r.integer("threads", 0, 1024).value_or(0));
}

/// Without an [input] table the encoder's input is the model's own: the
/// image and patch size of its config.json (or preset), and the resize,
/// crop, mean and std of its preprocessor_config.json (CLIP's without one).
/// A remote encoder's grid is checked when the pipeline reaches the node.
void take_input_from_model(pipeline_spec& s, std::vector<std::string>& errors) {
  if (s.cache.input_by_hand || (!s.encoder.remote.empty() && !s.encoder.fallback_local)) return;
  const auto shape = shape_of_model(s.encoder.model);
  if (!shape) return;  // validate() names the model's problem
  auto in = input_of_model(s.encoder.model, *shape);
  if (!in) {
    errors.push_back("[encoder].model: " + in.err().message + " (or set [input] by hand)");
    return;
  }
  s.cache.grid = in->grid;
  s.cache.preprocess = in->preprocess;
}

/// The fidelity target's settings: the profile's gate and encoder mode
/// where nobody set them by hand, and the controller's ladder, whose start
/// rung becomes the encoder's tolerance. A tolerance set by hand stays
/// fixed (no controller); a remote encoder runs with the node's settings.
void resolve_fidelity(pipeline_spec& s, bool every_by_hand, std::vector<std::string>& errors) {
  auto& e = s.encoder;
  auto& ctl = s.fidelity_control;
  if (auto st = ctl.target.validate(); !st) {
    errors.push_back("[fidelity]." + st.err().message);
    return;
  }
  // The gate runs in this process whatever runs the encoder: [gate] by hand,
  // else the profile's (below), else the noise-robust one.
  if (!s.cache.gate_by_hand && s.cache.grid.patch_size >= 4) s.cache.gate = noise_robust_gate();
  if (!e.remote.empty()) {
    ctl.answer_audit_every = 0;  // audits run the frame in full in the encoder's process
    if (!e.profile.empty())
      errors.push_back("[encoder].profile: the remote node runs the encoder; start it with --layer-tolerance instead");
    return;
  }
  std::string path = e.profile;
  if (path.empty()) {
    // A snapshot folder's own profile; a preset's ships with vlcache.
    const auto beside = is_preset_name(e.model) ? std::filesystem::path(VLCACHE_PROFILES) / (e.model + ".toml")
                                                : std::filesystem::path(e.model) / profile_file_name;
    if (std::filesystem::is_regular_file(beside)) path = beside.string();
  }
  std::optional<fidelity_profile> profile;
  if (!path.empty()) {
    auto p = load_fidelity_profile(path);
    if (!p) {
      errors.push_back("[encoder].profile: " + p.err().message);
      return;
    }
    auto shape = shape_of_model(e.model);
    if (!shape) return;  // validate() names the model's problem
    if (auto st = check_profile_shape(*p, path, *shape, e.model); !st) {
      errors.push_back("[encoder].profile: " + st.err().message);
      return;
    }
    profile = std::move(*p);
    ctl.profile = std::filesystem::absolute(path).string();
    if (!s.cache.gate_by_hand) s.cache.gate = profile->gate;
    if (!e.weight_dtype_by_hand) e.options.weight_dtype = profile->weight_dtype;
    if (!e.store_dtype_by_hand) e.options.store_dtype = profile->store_dtype;
  }
  if (e.tolerance_by_hand) return;
  controller_config c;
  // The profile's target was calibrated for its model (on answers where
  // it had them): it holds unless the pipeline states its own.
  if (profile && !ctl.target_by_hand) {
    ctl.target.cosine = profile->target.cosine;
    ctl.target.percentile = profile->target.percentile;
    ctl.target.max_err_over_naive = profile->target.max_err_over_naive;
  }
  c.target = ctl.target;
  if (profile) {
    c.ladder = profile->ladder;
    c.start = profile->start;
  } else {
    c.ladder = default_ladder();
    // Without a profile a stream starts where trained attention kept the
    // demo's answers (0.05) and loosens from there if the checks allow.
    c.start = static_cast<int>(std::find(c.ladder.begin(), c.ladder.end(), 0.05) - c.ladder.begin());
  }
  if (!e.attention_by_hand) {
    // Trained attention is peaked: reused tokens must see their context move
    // (the attention test). On random weights the test buys nothing and
    // costs a third of the store (docs/fidelity.md), and an f16 store
    // cannot hold its state.
    const bool test = profile ? profile->attention_test : !is_preset_name(e.model);
    e.options.attention_tolerance = test && e.options.store_dtype == "f32" ? -1.0 : 0.0;
  }
  e.options.layer_tolerance = c.ladder[static_cast<std::size_t>(c.start)];
  if (!every_by_hand) s.fidelity.every = 5;  // the controller's sensor, within max_share of encoder time
  if (ctl.control && s.fidelity.enabled()) ctl.controller = c;
}

camera_spec read_camera(table_reader& r, std::size_t index) {
  camera_spec c;
  c.name = r.string("name").value_or("camera" + std::to_string(index));
  if (auto st = check_stream_name(c.name); !st) r.fail("name", st.err().message);
  if (auto src = r.string("source")) c.source = is_url(*src) ? *src : *r.path("source");
  else r.fail("source", "missing (a video file, image pattern or stream URL)");
  c.fps = r.number("fps", 0.0, 1000.0).value_or(0.0);
  c.pace_fps = r.number("pace_fps", 0.0, 1000.0).value_or(0.0);
  c.start_frame = static_cast<std::uint64_t>(r.integer("start_frame", 0, 1ll << 40).value_or(0));
  c.max_frames = static_cast<std::uint64_t>(r.integer("max_frames", 0, 1ll << 40).value_or(0));
  c.loop = r.boolean("loop").value_or(false);
  // A network camera that drops is expected back: reconnect forever unless told.
  const bool network = connectors::is_network_source(c.source);
  c.retries = static_cast<int>(r.integer("retries", -1, 1000).value_or(network ? -1 : 3));
  const auto timeout = r.number("timeout_s", 0.1, 3600.0);
  c.timeout_s = timeout.value_or(5.0);
  // Keys that only one kind of source can act on are refused on the other.
  if (!network && timeout)
    r.fail("timeout_s", "bounds a network camera's connection and reads; '" + c.source + "' is a file");
  if (network && c.loop) r.fail("loop", "starts a file over; '" + c.source + "' is a network camera");
  if (network && c.pace_fps > 0)
    r.fail("pace_fps", "paces reading a file; a network camera delivers at its own rate (use fps to sample)");
  c.pad_to_square = r.boolean("pad_to_square").value_or(false);
  return c;
}

sink_spec read_sink(table_reader& r) {
  sink_spec s;
  s.kind = r.string("kind").value_or("console");
  const sink_kind_info* info = find_sink_kind(s.kind);
  if (info == nullptr) {
    r.fail("kind", "'" + s.kind + "' (" + sink_kind_names() + ")");
    return s;
  }
  for (const auto& key : info->keys)
    if (auto v = key.name == "path" ? r.path(key.name) : r.string(key.name)) s.options[key.name] = *v;
  return s;
}

template <class F>
void for_each_table(table_reader& top, const toml::table& root, const std::string& key,
                    std::vector<std::string>& errors, F&& f) {
  const toml::node* n = root.get(key);
  top.mark_known(key);
  if (n == nullptr) return;
  const toml::array* arr = n->as_array();
  if (arr == nullptr || !arr->is_array_of_tables()) {
    errors.push_back(key + ": expected an array of tables ([[" + key + "]])");
    return;
  }
  for (std::size_t i = 0; i < arr->size(); ++i) {
    table_reader r(arr->get(i)->as_table(), key + "[" + std::to_string(i) + "]", errors, top.base());
    f(r, i);
    r.reject_unknown_keys();
  }
}

}  // namespace

/// The host part of tcp://HOST:PORT or HOST:PORT ("" for ipc:// and inproc://).
std::string bound_host(const std::string& endpoint) {
  std::string rest = endpoint;
  if (auto scheme = rest.find("://"); scheme != std::string::npos) {
    if (rest.compare(0, scheme, "tcp") != 0) return "";
    rest = rest.substr(scheme + 3);
  }
  const auto colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

/// An empty host is every interface (CAF's and ZeroMQ's reading), not loopback.
bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

bool binds_loopback_only(const std::string& endpoint) {
  const auto scheme = endpoint.find("://");
  if (scheme != std::string::npos && endpoint.compare(0, scheme, "tcp") != 0) return true;  // ipc://, inproc://
  return is_loopback_host(bound_host(endpoint));
}

namespace {

using error_list = std::vector<std::string>;

/// Surveillance video and answers: nothing is served beyond this machine
/// unauthenticated unless the config says so. The view counts as
/// authenticated with HTTPS and a token together.
void check_exposure(const pipeline_spec& s, error_list& errors) {
  const bool authenticated = s.security.curve.has_value();
  auto beyond_loopback = [&](const std::string& key, const std::string& endpoint, bool has_auth) {
    const std::string host = bound_host(endpoint);
    if (binds_loopback_only(endpoint) || has_auth || s.security.insecure) return;
    errors.push_back(key + ": binds '" + host + "', beyond loopback, without authentication: " +
                     (key == "[view].http" ? std::string("set [view] tls_cert, tls_key and token_file, or ")
                                           : "set [security] secret_key and allowed_clients, or ") +
                     "set [security] insecure = true to serve it anyway");
  };
  if (s.ingest.enabled && s.ingest.bind) beyond_loopback("[ingest].endpoint", s.ingest.endpoint, authenticated);
  for (std::size_t i = 0; i < s.sinks.size(); ++i)
    if (s.sinks[i].kind == "zmq" && s.sinks[i].options.count("endpoint"))
      beyond_loopback("[sink[" + std::to_string(i) + "]].endpoint", s.sinks[i].options.at("endpoint"), authenticated);
  if (!s.llm.request_endpoint.empty()) beyond_loopback("[llm].request_endpoint", s.llm.request_endpoint, authenticated);
  if (!s.view.http.empty()) beyond_loopback("[view].http", s.view.http, s.view.authenticated());
  if (!s.view.http.empty() && authenticated && s.view.token.empty() && !s.security.insecure)
    errors.push_back("[view].http: the pipeline's sockets need CURVE keys ([security]), so its view needs a token "
                     "too (any local process could read the answers at /api/state): set [view] token_file");
  // The frames cross to the node and the tokens come back: in clear, only on this machine.
  for (const auto& node : s.encoder.remote)
    if (!binds_loopback_only(node) && !s.encoder.tls.enabled() && !s.security.insecure)
      errors.push_back("[encoder].remote: '" + bound_host(node) +
                       "' is beyond loopback without TLS: set [encoder] tls_cert, tls_key and tls_ca, or "
                       "[security] insecure = true");
}

/// Cameras (unique names, files that exist, scene folders) and sinks.
void check_inputs_and_sinks(const pipeline_spec& s, error_list& errors) {
  if (s.cameras.empty() && !s.ingest.enabled) errors.push_back("camera: no [[camera]] and no [ingest] configured");
  if (s.ingest.enabled && s.ingest.endpoint.find("://") == std::string::npos)
    errors.push_back("[ingest].endpoint: '" + s.ingest.endpoint + "' is not a ZeroMQ endpoint (tcp://HOST:PORT)");
  std::set<std::string> names;
  for (std::size_t i = 0; i < s.cameras.size(); ++i) {
    const auto& c = s.cameras[i];
    const std::string key = "[camera[" + std::to_string(i) + "]].";
    if (!names.insert(c.name).second) errors.push_back(key + "name: '" + c.name + "' is used twice");
    if (!c.source.empty() && !is_url(c.source) && c.source.find('%') == std::string::npos &&
        !std::filesystem::exists(c.source))
      errors.push_back(key + "source: file " + c.source + " does not exist");
    else if (std::filesystem::is_directory(c.source) && !connectors::is_scene_folder(c.source))
      errors.push_back(key + "source: '" + c.source + "' is a folder but not a rendered scene (no truth.jsonl and frames/)");
  }
  for (std::size_t i = 0; i < s.sinks.size(); ++i) {
    const std::string where = "[sink[" + std::to_string(i) + "]].";
    const sink_kind_info* info = find_sink_kind(s.sinks[i].kind);
    if (info == nullptr) {
      errors.push_back(where + "kind: '" + s.sinks[i].kind + "' (" + sink_kind_names() + ")");
      continue;
    }
    for (auto& e : info->check(s.sinks[i], where)) errors.push_back(std::move(e));
  }
}

/// The encoder: what a remote node takes on its own command line, the
/// model against [input], the device and dtype names, drift control.
void check_encoder(const pipeline_spec& s, error_list& errors) {
  const auto& m = s.encoder.model;
  if (!s.encoder.remote.empty()) {
    // The node loads the model; its grid is checked when the pipeline connects.
    if (s.fidelity.enabled())
      errors.push_back("[fidelity].shadow_every: the checks run the full forward beside the cached one, in "
                       "the encoder's process; with a remote encoder they cannot (remove [fidelity])");
    if (s.cache.index)
      errors.push_back("[index]: the remote node holds the token stores; a budget for them cannot be set "
                       "from here (remove [index] or run the encoder in this process)");
    if (s.cache.views)
      errors.push_back("[views]: view memory keeps token stores under ids of their own, on the node that "
                       "holds them; a remote node cannot yet (remove [views] or run the encoder in this process)");
    if (s.encoder.options.layer_tolerance > 0)
      errors.push_back("[encoder].layer_tolerance: the remote node runs the encoder; start it with "
                       "--layer-tolerance instead");
    if (s.encoder.options.attention_tolerance >= 0)
      errors.push_back("[encoder].attention_tolerance: the remote node runs the encoder; start it with "
                       "--attention-tolerance instead");
    if (s.encoder.options.store_dtype != "f32")
      errors.push_back("[encoder].store_dtype: the remote node holds the token stores; start it with "
                       "--store-dtype instead");
    if (s.encoder.options.weight_dtype != "f32")
      errors.push_back("[encoder].weight_dtype: the remote node holds the weights; start it with "
                       "--weight-dtype instead");
  }
  if (!s.encoder.remote.empty() && !s.encoder.fallback_local) {
    // The model is loaded on the nodes only.
  } else if (is_preset_name(m)) {
    const auto c = *preset_config(m);
    if (c.image_size != s.cache.grid.image_size || c.patch_size != s.cache.grid.patch_size)
      errors.push_back("[encoder].model: preset '" + m + "' encodes " + std::to_string(c.image_size) + "/" +
                       std::to_string(c.patch_size) + " but [input] is " +
                       std::to_string(s.cache.grid.image_size) + "/" + std::to_string(s.cache.grid.patch_size));
  } else if (!std::filesystem::exists(std::filesystem::path(m) / "config.json")) {
    errors.push_back("[encoder].model: " + not_a_model(m));
  } else if (auto shape = shape_of_model(m); !shape) {
    errors.push_back("[encoder].model: " + shape.err().message);
  } else if (shape->image_size != s.cache.grid.image_size || shape->patch_size != s.cache.grid.patch_size) {
    errors.push_back("[input]: " + std::to_string(s.cache.grid.image_size) + "/" +
                     std::to_string(s.cache.grid.patch_size) + ", but the model '" + m + "' takes " +
                     std::to_string(shape->image_size) + "/" + std::to_string(shape->patch_size) +
                     " (its config.json; remove [input] to take the model's)");
  }
  // The names the encoder takes (core/base/device_names); CUDA's presence is checked at load.
  const auto device = parse_device_name(s.encoder.options.device);
  if (!device) errors.push_back("[encoder].device: " + device.err().message);
  else if (auto dtype = parse_dtype_name(s.encoder.options.dtype, *device); !dtype)
    errors.push_back("[encoder].dtype: " + dtype.err().message);
  if (auto st = s.drift.validate(); !st) errors.push_back("[drift]: " + st.err().message);
}

/// The language model, its tokenizer and the answer policy.
void check_llm(const pipeline_spec& s, error_list& errors) {
  const auto& m = s.encoder.model;
  if (s.llm.enabled) {
    const std::string lm = s.llm.model.empty() ? m : s.llm.model;
    const bool folder = std::filesystem::exists(std::filesystem::path(lm) / "config.json");
    if (!folder && !is_preset_name(lm) && !s.llm.model.empty())
      errors.push_back("[llm].model: " + not_a_model(lm));
    if (!s.llm.tokenizer.empty() && !std::filesystem::exists(s.llm.tokenizer))
      errors.push_back("[llm].tokenizer: file " + s.llm.tokenizer + " does not exist");
    else if (s.llm.tokenizer.empty() && is_preset_name(lm))
      errors.push_back("[llm].tokenizer: missing (preset '" + lm + "' has no tokenizer.model)");
    else if (s.llm.tokenizer.empty() && !std::filesystem::exists(std::filesystem::path(lm) / "tokenizer.model"))
      errors.push_back("[llm].tokenizer: missing, and '" + lm + "' has no tokenizer.model");
    if (is_preset_name(lm) && is_preset_name(m) && lm != m)
      errors.push_back("[llm].model: preset '" + lm + "' does not take the tokens of encoder preset '" + m +
                       "' (their widths differ; use the same preset name)");
    if (auto st = s.llm.policy.validate(); !st) errors.push_back("[llm]: " + st.err().message);
  }
}

}  // namespace

std::vector<std::string> validate(const pipeline_spec& s) {
  error_list errors;
  check_exposure(s, errors);
  check_inputs_and_sinks(s, errors);
  check_encoder(s, errors);
  if (!s.view.http.empty()) {
    const auto address = parse_host_port(s.view.http);
    if (!address || address->host.empty())
      errors.push_back("[view].http: '" + s.view.http + "' is not HOST:PORT");
  }
  check_llm(s, errors);
  if (s.flow.shards > s.cache.grid.count())
    errors.push_back("[pipeline].shards: " + std::to_string(s.flow.shards) + " shards for " +
                     std::to_string(s.cache.grid.count()) + " patches");
  return errors;
}

std::vector<std::string> check_camera_files(const pipeline_spec& spec) {
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < spec.cameras.size(); ++i) {
    const auto& c = spec.cameras[i];
    if (connectors::is_network_source(c.source) || connectors::is_scene_folder(c.source)) continue;
    const std::string key = "[camera[" + std::to_string(i) + "]].source: ";
    auto reader = connectors::video_reader::open({c.source, 0.0, c.start_frame, 1, 0.0});
    if (!reader) {
      errors.push_back(key + reader.err().message);
      continue;
    }
    if (auto frame = (*reader)->read(); !frame)
      errors.push_back(key + c.source + " opens but gives no frame" +
                       (c.start_frame ? " at start_frame " + std::to_string(c.start_frame) : std::string()) + ": " +
                       frame.err().message);
  }
  return errors;
}

namespace {

/// [fidelity]: the shadow checks and the target; true when shadow_every
/// was set by hand.
bool read_fidelity(table_reader& fi, shadow_config& fc, fidelity_spec& ctl) {
  fc.every = static_cast<int>(fi.integer("shadow_every", 0, 1 << 30).value_or(0));
  fc.max_share = fi.number("max_share", 1e-6, 100.0).value_or(fc.max_share);
  fc.min_cosine = fi.number("min_cosine", 0.0, 1.0).value_or(0.0);
  // Any of the three states the pipeline's own target, which then replaces a profile's whole.
  const auto target = fi.number("target", 1e-6, 1.0);
  const auto percentile = fi.number("percentile", 0.0, 50.0);
  const auto relative = fi.number("max_err_over_naive", 0.0, 100.0);
  ctl.target_by_hand = target || percentile || relative;
  ctl.target.cosine = target.value_or(ctl.target.cosine);
  ctl.target.percentile = percentile.value_or(ctl.target.percentile);
  ctl.target.max_err_over_naive = relative.value_or(ctl.target.max_err_over_naive);
  ctl.control = fi.boolean("control").value_or(ctl.control);
  ctl.target.answer_agreement = fi.number("answer_agreement", 0.0, 1.0).value_or(ctl.target.answer_agreement);
  ctl.answer_audit_every =
      static_cast<int>(fi.integer("answer_audit_every", 0, 1 << 30).value_or(ctl.answer_audit_every));
  return fi.integer("shadow_every", 0, 1 << 30).has_value();
}

void read_view(table_reader& r, view_spec& v) {
  v.http = r.string("http").value_or("");
  v.max_view_fps = r.number("max_fps", 0.1, 60.0).value_or(v.max_view_fps);
  v.hold_s = r.number("hold_s", 0.0, 86400.0).value_or(0.0);
  v.tls_cert = r.path("tls_cert").value_or("");
  v.tls_key = r.path("tls_key").value_or("");
  if (v.tls_cert.empty() != v.tls_key.empty())
    r.fail(v.tls_cert.empty() ? "tls_cert" : "tls_key", "missing: HTTPS needs the certificate and its key");
  for (const auto* k : {"tls_cert", "tls_key"}) {
    const std::string& path = std::string(k) == "tls_cert" ? v.tls_cert : v.tls_key;
    if (!path.empty() && !std::filesystem::is_regular_file(path)) r.fail(k, "file '" + path + "' does not exist");
  }
  v.token_file = r.path("token_file").value_or("");
  if (!v.token_file.empty()) {
    std::ifstream f(v.token_file);
    std::getline(f, v.token);
    v.token.erase(v.token.find_last_not_of(" \t\r") + 1);
    if (!f && v.token.empty()) r.fail("token_file", "cannot read '" + v.token_file + "'");
    else if (v.token.size() < 16) r.fail("token_file", "'" + v.token_file + "' holds a token shorter than 16 characters");
  }
  v.api_requests_per_s = r.number("api_requests_per_s", 0.01, 10000.0).value_or(v.api_requests_per_s);
  v.api_burst = r.number("api_burst", 1.0, 10000.0).value_or(v.api_burst);
  v.api_max_image_bytes = r.integer("api_max_image_bytes", 1024, std::int64_t{256} << 20).value_or(v.api_max_image_bytes);
  v.api_max_image_pixels = r.integer("api_max_image_pixels", 1024, std::int64_t{1} << 28).value_or(v.api_max_image_pixels);
  v.api_max_tokens = static_cast<int>(r.integer("api_max_tokens", 1, 4096).value_or(v.api_max_tokens));
  r.reject_unknown_keys();
}

void read_security(table_reader& r, security_spec& sec) {
  sec.secret_key = r.path("secret_key").value_or("");
  sec.allowed_clients = r.path("allowed_clients").value_or("");
  sec.insecure = r.boolean("insecure").value_or(false);
  if (sec.secret_key.empty() != sec.allowed_clients.empty())
    r.fail(sec.secret_key.empty() ? "secret_key" : "allowed_clients",
           "missing: CURVE needs the pipeline's key pair and the clients it allows");
  else if (!sec.secret_key.empty()) {
    auto pair = connectors::read_key_pair(sec.secret_key);
    auto allowed = connectors::read_allowed_keys(sec.allowed_clients);
    if (!connectors::curve_available()) r.fail("secret_key", "this libzmq has no CURVE support");
    else if (!pair) r.fail("secret_key", pair.err().message);
    else if (!allowed) r.fail("allowed_clients", allowed.err().message);
    else if (auto streams = connectors::read_allowed_streams(sec.allowed_clients); !streams)
      r.fail("allowed_clients", streams.err().message);
    else sec.curve = connectors::curve_server_keys{*pair, *allowed, *streams};
  }
  r.reject_unknown_keys();
}

void read_ingest(table_reader& r, ingest_spec& in) {
  in.enabled = true;
  if (auto e = r.string("endpoint")) in.endpoint = *e;
  else r.fail("endpoint", "missing (tcp://HOST:PORT)");
  in.bind = r.boolean("bind").value_or(true);
  in.idle_timeout_s = r.number("idle_timeout_s", 0.01, 86400.0).value_or(in.idle_timeout_s);
  in.max_streams = static_cast<int>(r.integer("max_streams", 1, 4096).value_or(in.max_streams));
  in.stop_when_idle = r.boolean("stop_when_idle").value_or(false);
  in.limits.max_message_bytes =
      static_cast<std::uint64_t>(r.number("max_frame_mb", 0.001, 64.0).value_or(16.0) * (1 << 20));
  in.limits.max_per_s = r.number("max_fps_per_peer", 0.0, 10000.0).value_or(in.limits.max_per_s);
  in.limits.burst = std::max(1.0, in.limits.max_per_s / 2);
  in.limits.max_streams = static_cast<int>(r.integer("max_streams_per_peer", 0, 4096).value_or(in.limits.max_streams));
  r.reject_unknown_keys();
}

}  // namespace

pipeline_result parse_pipeline(std::string_view text, const std::string& origin,
                               const std::filesystem::path& base) {
  pipeline_result out;
  auto root = parse_toml(text, origin, out.errors);
  if (!root) return out;
  table_reader top(&*root, "", out.errors, base);
  read_cache_tables(top, out.spec.cache, out.errors);
  table_reader p(top.table("pipeline"), "pipeline", out.errors, base);
  read_pipeline(p, out.spec);
  p.reject_unknown_keys();
  table_reader d(top.table("drift"), "drift", out.errors, base);
  read_drift(d, out.spec.drift);
  d.reject_unknown_keys();
  table_reader fi(top.table("fidelity"), "fidelity", out.errors, base);
  const bool every_by_hand = read_fidelity(fi, out.spec.fidelity, out.spec.fidelity_control);
  fi.reject_unknown_keys();
  table_reader e(top.table("encoder"), "encoder", out.errors, base);
  read_encoder(e, out.spec.encoder);
  e.reject_unknown_keys();
  if (out.spec.cache.index) out.spec.encoder.options.store_budget = *out.spec.cache.index;
  if (const toml::table* t = top.table("view")) {
    table_reader r(t, "view", out.errors, base);
    read_view(r, out.spec.view);
    r.reject_unknown_keys();
  }
  if (const toml::table* t = top.table("security")) {
    table_reader r(t, "security", out.errors, base);
    read_security(r, out.spec.security);
    r.reject_unknown_keys();
  }
  if (const toml::table* t = top.table("llm")) {
    table_reader r(t, "llm", out.errors, base);
    read_llm(r, out.spec.llm);
    r.reject_unknown_keys();
  }
  if (const toml::table* t = top.table("ingest")) {
    table_reader r(t, "ingest", out.errors, base);
    read_ingest(r, out.spec.ingest);
    r.reject_unknown_keys();
  }
  for_each_table(top, *root, "camera", out.errors,
                 [&](table_reader& r, std::size_t i) { out.spec.cameras.push_back(read_camera(r, i)); });
  for_each_table(top, *root, "sink", out.errors,
                 [&](table_reader& r, std::size_t) { out.spec.sinks.push_back(read_sink(r)); });
  top.reject_unknown_keys();
  if (out.spec.sinks.empty()) out.spec.sinks.push_back(sink_spec{});
  const std::size_t syntax_errors = out.errors.size();
  take_input_from_model(out.spec, out.errors);
  if (syntax_errors == 0) resolve_fidelity(out.spec, every_by_hand, out.errors);
  if (out.errors.size() == syntax_errors)
    for (auto& err : validate(out.spec)) out.errors.push_back(std::move(err));
  place_errors(*root, origin, out.errors);
  return out;
}

pipeline_result load_pipeline(const std::string& path) {
  pipeline_result out;
  auto text = read_text_file(path, out.errors);
  return text ? parse_pipeline(*text, path, std::filesystem::absolute(path).parent_path()) : out;
}

}  // namespace vlcache::graph
