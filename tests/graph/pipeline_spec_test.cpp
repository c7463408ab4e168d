// TOML -> pipeline spec: every key read, every error named.

#include <gtest/gtest.h>

#include <filesystem>

#include <algorithm>

#include "graph/pipeline_spec.hpp"

namespace vlcache::graph {
namespace {

std::string all(const pipeline_result& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}
bool has(const pipeline_result& r, const std::string& needle) {
  return std::any_of(r.errors.begin(), r.errors.end(),
                     [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

const std::string video = VLCACHE_SAMPLE_VIDEO;

TEST(pipeline_spec, reads_cameras_encoder_flow_and_sinks) {
  auto r = parse_pipeline(R"(
    [pipeline]
    max_in_flight = 3
    drop_policy = "block"
    shards = 4
    [drift]
    refresh_interval = 30
    [encoder]
    model = "tiny"
    batch_tokens = 32
    [input]
    image_size = 32
    patch_size = 8
    [[camera]]
    name = "a"
    source = ")" + video + R"("
    fps = 2.5
    pace_fps = 10
    loop = true
    [[camera]]
    source = ")" + video + R"("
    start_frame = 100
    [[sink]]
    kind = "jsonl"
    path = "/tmp/out.jsonl"
  )", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  const auto& s = r.spec;
  ASSERT_EQ(s.cameras.size(), 2u);
  EXPECT_EQ(s.cameras[0].name, "a");
  EXPECT_DOUBLE_EQ(s.cameras[0].fps, 2.5);
  EXPECT_DOUBLE_EQ(s.cameras[0].pace_fps, 10.0);
  EXPECT_DOUBLE_EQ(s.cameras[1].pace_fps, 0.0);
  EXPECT_TRUE(s.cameras[0].loop);
  EXPECT_EQ(s.cameras[1].name, "camera1");
  EXPECT_EQ(s.cameras[1].start_frame, 100u);
  EXPECT_EQ(s.flow.max_in_flight, 3);
  EXPECT_EQ(s.flow.policy, drop_policy::block);
  EXPECT_EQ(s.flow.shards, 4);
  EXPECT_EQ(s.drift.refresh_interval, 30);
  EXPECT_EQ(s.encoder.model, "tiny");
  EXPECT_EQ(s.encoder.batch_tokens, 32);
  ASSERT_EQ(s.sinks.size(), 1u);
  EXPECT_EQ(s.sinks[0].kind, "jsonl");
  EXPECT_EQ(s.sinks[0].options.at("path"), "/tmp/out.jsonl");
}

TEST(pipeline_spec, reports_every_error_before_anything_runs) {
  auto r = parse_pipeline(R"(
    [pipeline]
    drop_policy = "random"
    max_in_flight = 0
    [encoder]
    model = "vit-b16"
    device = "tpu"
    [input]
    image_size = 336
    patch_size = 14
    [[camera]]
    name = "x"
    source = "/nonexistent/cam.avi"
    speed = 3
    [[camera]]
    name = "x"
    [[sink]]
    kind = "jsonl"
  )", "inline");
  EXPECT_TRUE(has(r, "[pipeline].drop_policy: 'random'")) << all(r);
  EXPECT_TRUE(has(r, "[pipeline].max_in_flight: 0 is outside")) << all(r);
  EXPECT_TRUE(has(r, "[camera[0]].speed: unknown key")) << all(r);
  EXPECT_TRUE(has(r, "[camera[1]].source: missing")) << all(r);
  EXPECT_FALSE(r.ok());
}

TEST(pipeline_spec, semantic_checks_name_their_keys) {
  pipeline_spec s;
  s.cache.grid = *patch_grid::make(336, 14);
  s.encoder.model = "vit-b16";
  s.encoder.options.device = "tpu";
  s.cameras = {{"x", "/nonexistent/cam.avi"}, {"x", video}};
  s.sinks = {{"jsonl", {}}, {"carrier-pigeon", {}}};
  const auto errors = validate(s);
  pipeline_result r{s, errors};
  EXPECT_TRUE(has(r, "[camera[0]].source: file /nonexistent/cam.avi does not exist")) << all(r);
  EXPECT_TRUE(has(r, "[camera[1]].name: 'x' is used twice")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].model: preset 'vit-b16' encodes 224/16 but [input] is 336/14")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].device: 'tpu'")) << all(r);
  EXPECT_TRUE(has(r, "[sink[0]].path: a jsonl sink needs a path")) << all(r);
  EXPECT_TRUE(has(r, "[sink[1]].kind: 'carrier-pigeon' (console, jsonl or zmq)")) << all(r);
}

// What the remote node runs cannot be set from the pipeline: said, not ignored.
TEST(pipeline_spec, encoder_keys_the_remote_node_owns_are_refused) {
  auto r = parse_pipeline("[encoder]\nremote = \"127.0.0.1:5600\"\nlayer_tolerance = 0.1\nattention_tolerance = 0\n"
                          "weight_dtype = \"f16\"\n"
                          "[index]\ncapacity_mb = 8\n[fidelity]\nshadow_every = 10\n"
                          "[[camera]]\nsource = \"" + video + "\"\n", "inline");
  EXPECT_TRUE(has(r, "[index]: the remote node holds the token stores")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].layer_tolerance: the remote node runs the encoder")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].attention_tolerance: the remote node runs the encoder")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].weight_dtype: the remote node holds the weights")) << all(r);
  EXPECT_TRUE(has(r, "[fidelity].shadow_every: the checks run the full forward beside the cached one")) << all(r);
  auto views = parse_pipeline("[encoder]\nremote = \"127.0.0.1:5600\"\n[views]\n[[camera]]\nsource = \"" + video + "\"\n",
                              "inline");
  EXPECT_TRUE(has(views, "[views]: view memory keeps token stores under ids of their own")) << all(views);
  auto local = parse_pipeline("[encoder]\nlayer_tolerance = 0.1\n[index]\ncapacity_mb = 8\neviction = \"lfu\"\n"
                              "[[camera]]\nsource = \"" + video + "\"\n", "inline");
  ASSERT_TRUE(local.ok()) << all(local);
  EXPECT_DOUBLE_EQ(local.spec.encoder.options.layer_tolerance, 0.1);
  EXPECT_LT(local.spec.encoder.options.attention_tolerance, 0.0) << "unset: as layer_tolerance";
  auto input_only = parse_pipeline("[encoder]\nlayer_tolerance = 0.1\nattention_tolerance = 0\n[[camera]]\nsource = \"" +
                                   video + "\"\n", "inline");
  ASSERT_TRUE(input_only.ok()) << all(input_only);
  EXPECT_DOUBLE_EQ(input_only.spec.encoder.options.attention_tolerance, 0.0);
  auto without = parse_pipeline("[encoder]\nlayer_tolerance = 0\nattention_tolerance = 0.1\n[[camera]]\nsource = \"" +
                                video + "\"\n", "inline");
  EXPECT_TRUE(has(without, "[encoder].attention_tolerance: tests reused tokens of layer-wise recompute")) << all(without);
  auto controlled = parse_pipeline("[encoder]\nattention_tolerance = 0.1\n[[camera]]\nsource = \"" + video + "\"\n",
                                   "inline");
  ASSERT_TRUE(controlled.ok()) << "layer-wise is the default: the controller moves the layer tolerance" << all(controlled);
  EXPECT_EQ(local.spec.encoder.options.store_budget.capacity_bytes, 8u << 20);
  EXPECT_EQ(local.spec.encoder.options.store_budget.policy, eviction_policy::lfu);
}

// The local fallback loads the model here, so its grid is checked here too.
TEST(pipeline_spec, encoder_fallback_is_local_or_none_and_needs_a_remote) {
  const std::string cam = "[[camera]]\nsource = \"" + video + "\"\n";
  auto ok = parse_pipeline("[input]\nimage_size = 32\npatch_size = 8\n[encoder]\nmodel = \"tiny\"\n"
                           "remote = \"127.0.0.1:5600\"\nfallback = \"local\"\n" + cam, "inline");
  ASSERT_TRUE(ok.ok()) << all(ok);
  EXPECT_TRUE(ok.spec.encoder.fallback_local);
  auto none = parse_pipeline("[encoder]\nremote = \"127.0.0.1:5600\"\nfallback = \"none\"\n" + cam, "inline");
  ASSERT_TRUE(none.ok()) << all(none);
  EXPECT_FALSE(none.spec.encoder.fallback_local);
  auto bad = parse_pipeline("[encoder]\nremote = \"127.0.0.1:5600\"\nfallback = \"cloud\"\n" + cam, "inline");
  EXPECT_TRUE(has(bad, "[encoder].fallback: 'cloud' (local or none)")) << all(bad);
  auto alone = parse_pipeline("[encoder]\nfallback = \"local\"\n" + cam, "inline");
  EXPECT_TRUE(has(alone, "[encoder].fallback: is for a remote encoder")) << all(alone);
  // An [input] of 224/16: the tiny model (32/8) cannot be the fallback.
  auto grid = parse_pipeline("[input]\nimage_size = 224\npatch_size = 16\n[encoder]\nmodel = \"tiny\"\n"
                             "remote = \"127.0.0.1:5600\"\nfallback = \"local\"\n" + cam,
                             "inline");
  EXPECT_TRUE(has(grid, "[encoder].model: preset 'tiny' encodes 32/8")) << all(grid);
  // Without [input] the fallback's model gives the grid.
  auto own = parse_pipeline("[encoder]\nmodel = \"tiny\"\nremote = \"127.0.0.1:5600\"\nfallback = \"local\"\n" + cam,
                            "inline");
  EXPECT_EQ(own.spec.cache.grid.image_size, 32) << all(own);
}

TEST(pipeline_spec, host_and_port_keys_share_one_parser) {
  const std::string cam = "[[camera]]\nsource = \"" + video + "\"\n";
  for (const std::string bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", "h:123456"}) {
    auto remote = parse_pipeline("[encoder]\nremote = \"" + bad + "\"\n" + cam, "inline");
    EXPECT_TRUE(has(remote, "[encoder].remote: '" + bad + "' is not HOST:PORT")) << all(remote);
    auto view = parse_pipeline(cam + "[view]\nhttp = \"" + bad + "\"\n", "inline");
    EXPECT_TRUE(has(view, "[view].http: '" + bad + "' is not HOST:PORT")) << all(view);
  }
  auto ok = parse_pipeline("[encoder]\nremote = \"127.0.0.1:65535\"\n" + cam + "[view]\nhttp = \"127.0.0.1:0\"\n",
                           "inline");
  EXPECT_TRUE(ok.ok()) << all(ok);
}

TEST(pipeline_spec, needs_a_camera_and_a_known_model) {
  auto r = parse_pipeline("[encoder]\nmodel = \"/nonexistent/llava\"\n", "inline");
  EXPECT_TRUE(has(r, "camera: no [[camera]] and no [ingest] configured")) << all(r);
  EXPECT_TRUE(has(r, "[encoder].model: no folder /nonexistent/llava (nor a preset of that name")) << all(r);
}

const std::string tiny_head = "[encoder]\nmodel = \"tiny\"\n[input]\nimage_size = 32\npatch_size = 8\n"
                              "[[camera]]\nsource = \"" + video + "\"\n";
const std::string tokenizer = std::string(VLCACHE_FIXTURES) + "/llama_tiny/tokenizer.model";

TEST(pipeline_spec, reads_the_llm_and_view_tables) {
  auto r = parse_pipeline(tiny_head + "[llm]\ntokenizer = \"" + tokenizer +
                              "\"\nquestion = \"Anyone at the door?\"\nmax_new_tokens = 7\nevery_n_frames = 3\n"
                              "change_threshold = 0.4\nrecompute_first = 2\nfull_every = 9\nkeep_kv_current = true\n"
                              "request_endpoint = \"tcp://127.0.0.1:5999\"\n[view]\nhttp = \"127.0.0.1:8088\"\nhold_s = 5\n",
                          "t.toml");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_TRUE(r.spec.llm.enabled);
  EXPECT_EQ(r.spec.llm.question, "Anyone at the door?");
  EXPECT_EQ(r.spec.llm.answer.sampling.max_new_tokens, 7);
  EXPECT_EQ(r.spec.llm.policy.every_n_frames, 3);
  EXPECT_DOUBLE_EQ(r.spec.llm.policy.change_threshold, 0.4);
  EXPECT_EQ(r.spec.llm.answer.reuse.recompute_first, 2);
  EXPECT_EQ(r.spec.llm.answer.reuse.full_every, 9);
  EXPECT_TRUE(r.spec.llm.keep_kv_current);
  EXPECT_EQ(r.spec.view.http, "127.0.0.1:8088");
  EXPECT_DOUBLE_EQ(r.spec.view.hold_s, 5.0);
}

TEST(pipeline_spec, reads_the_api_limits_and_refuses_them_out_of_range) {
  auto r = parse_pipeline(tiny_head + "[llm]\ntokenizer = \"" + tokenizer +
                              "\"\nmax_waiting_questions = 3\n[view]\nhttp = \"127.0.0.1:8088\"\n"
                              "api_requests_per_s = 7.5\napi_burst = 9\napi_max_image_bytes = 65536\n"
                              "api_max_image_pixels = 4096\napi_max_tokens = 12\n",
                          "t.toml");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.llm.max_waiting_questions, 3);
  EXPECT_DOUBLE_EQ(r.spec.view.api_requests_per_s, 7.5);
  EXPECT_DOUBLE_EQ(r.spec.view.api_burst, 9.0);
  EXPECT_EQ(r.spec.view.api_max_image_bytes, 65536);
  EXPECT_EQ(r.spec.view.api_max_image_pixels, 4096);
  EXPECT_EQ(r.spec.view.api_max_tokens, 12);
  auto bad = parse_pipeline(tiny_head + "[llm]\ntokenizer = \"" + tokenizer + "\"\nmax_waiting_questions = 0\n"
                                "[view]\napi_requests_per_s = 0\napi_max_tokens = 100000\napi_max_image_bytes = 10\n",
                            "t.toml");
  for (const char* key : {"[llm].max_waiting_questions", "[view].api_requests_per_s", "[view].api_max_tokens",
                          "[view].api_max_image_bytes"})
    EXPECT_TRUE(has(bad, key)) << key << ": " << all(bad);
}

TEST(pipeline_spec, llm_and_view_errors_name_their_keys) {
  auto r = parse_pipeline(tiny_head + "[llm]\ntemplate = \"no slot\"\nevery_n_frames = -1\ntop_p = 2.0\n"
                                      "request_endpoint = \"5999\"\nwhat = 1\n[view]\nhttp = \"nowhere\"\n",
                          "t.toml");
  EXPECT_TRUE(has(r, "[llm].template")) << all(r);
  EXPECT_TRUE(has(r, "[llm].every_n_frames")) << all(r);
  EXPECT_TRUE(has(r, "[llm].top_p")) << all(r);
  EXPECT_TRUE(has(r, "[llm].request_endpoint")) << all(r);
  EXPECT_TRUE(has(r, "[llm].what")) << all(r);
  auto v = parse_pipeline(tiny_head + "[view]\nhttp = \"nowhere\"\n[llm]\n", "t.toml");
  EXPECT_TRUE(has(v, "[view].http")) << all(v);
  EXPECT_TRUE(has(v, "[llm].tokenizer: missing")) << all(v);  // a preset has no tokenizer.model
  auto m = parse_pipeline(tiny_head + "[llm]\nmodel = \"vit-b16\"\ntokenizer = \"" + tokenizer + "\"\n", "t.toml");
  EXPECT_TRUE(has(m, "does not take the tokens of encoder preset 'tiny'")) << all(m);
  auto f = parse_pipeline(tiny_head + "[llm]\ntokenizer = \"/nonexistent/tok.model\"\n", "t.toml");
  EXPECT_TRUE(has(f, "[llm].tokenizer: file /nonexistent/tok.model does not exist")) << all(f);
  // Keeping the image K/V current needs reuse, and the question after the image.
  const std::string llm = tiny_head + "[llm]\ntokenizer = \"" + tokenizer + "\"\nkeep_kv_current = true\n";
  EXPECT_TRUE(parse_pipeline(llm, "t.toml").ok()) << all(parse_pipeline(llm, "t.toml"));
  EXPECT_FALSE(parse_pipeline(tiny_head + "[llm]\ntokenizer = \"" + tokenizer + "\"\n", "t.toml").spec.llm.keep_kv_current);
  auto k = parse_pipeline(llm + "kv_reuse = false\n", "t.toml");
  EXPECT_TRUE(has(k, "[llm].keep_kv_current: needs kv_reuse = true")) << all(k);
  auto q = parse_pipeline(llm + "template = \"USER: {question} <image> ASSISTANT:\"\n", "t.toml");
  EXPECT_TRUE(has(q, "[llm].keep_kv_current: prompt template 'USER: {question} <image> ASSISTANT:' puts {question} "
                     "before <image>"))
      << all(q);
}

TEST(pipeline_spec, a_network_camera_reconnects_forever_unless_told) {
  auto r = parse_pipeline(R"(
    [encoder]
    model = "tiny"
    [input]
    image_size = 32
    patch_size = 8
    [[camera]]
    name = "ip"
    source = "rtsp://127.0.0.1:8554/cam"
    [[camera]]
    name = "bounded"
    source = "rtsp://127.0.0.1:8554/other"
    retries = 2
    timeout_s = 1.5
    [[camera]]
    name = "file"
    source = ")" + video + R"("
  )", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.cameras[0].retries, -1);
  EXPECT_DOUBLE_EQ(r.spec.cameras[0].timeout_s, 5.0);
  EXPECT_EQ(r.spec.cameras[1].retries, 2);
  EXPECT_DOUBLE_EQ(r.spec.cameras[1].timeout_s, 1.5);
  EXPECT_EQ(r.spec.cameras[2].retries, 3) << "a file gives up";
  auto bad = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[input]\nimage_size = 32\npatch_size = 8\n"
                            "[[camera]]\nsource = \"rtsp://h/c\"\nretries = -2\ntimeout_s = 0\n", "inline");
  EXPECT_TRUE(has(bad, "retries: -2 is outside [-1, 1000]")) << all(bad);
  EXPECT_TRUE(has(bad, "timeout_s")) << all(bad);
  // Keys one kind of source cannot act on are refused on it.
  auto misplaced = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[input]\nimage_size = 32\npatch_size = 8\n"
                                  "[[camera]]\nname = \"ip\"\nsource = \"rtsp://h/c\"\nloop = true\npace_fps = 5\n"
                                  "[[camera]]\nname = \"file\"\nsource = \"" + video + "\"\ntimeout_s = 2\n", "inline");
  EXPECT_TRUE(has(misplaced, "[camera[0]].loop: starts a file over")) << all(misplaced);
  EXPECT_TRUE(has(misplaced, "[camera[0]].pace_fps: paces reading a file")) << all(misplaced);
  EXPECT_TRUE(has(misplaced, "[camera[1]].timeout_s: bounds a network camera's connection")) << all(misplaced);
}

TEST(pipeline_spec, a_camera_on_a_folder_that_is_no_scene_is_named) {
  const auto dir = std::filesystem::temp_directory_path() / "vlcache_not_a_scene";
  std::filesystem::create_directories(dir);
  auto r = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[input]\nimage_size = 32\npatch_size = 8\n"
                          "[[camera]]\nsource = \"" + dir.string() + "\"\n", "t.toml");
  EXPECT_TRUE(has(r, "[camera[0]].source: '" + dir.string() + "' is a folder but not a rendered scene")) << all(r);
}

TEST(pipeline_spec, shipped_pipeline_is_valid_from_any_folder) {
  // Its tokenizer path is relative to the config's folder, not to where it runs.
  // (configs/pipeline.toml needs its rendered scenes: tests/process/demo_pipeline_test.sh runs it.)
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(std::filesystem::temp_directory_path());
  auto r = load_pipeline(std::string(VLCACHE_CONFIGS) + "/vtest.toml");
  std::filesystem::current_path(cwd);
  EXPECT_TRUE(r.ok()) << all(r);
  EXPECT_TRUE(r.spec.llm.enabled);
  EXPECT_EQ(r.spec.cameras.size(), 4u);
}

}  // namespace
}  // namespace vlcache::graph

namespace vlcache::graph {
namespace {
TEST(pipeline_spec, reference_file_documents_valid_keys) {
  auto r = load_pipeline(std::string(VLCACHE_CONFIGS) + "/reference.toml");
  EXPECT_TRUE(r.ok()) << all(r);
}
}  // namespace
}  // namespace vlcache::graph

namespace vlcache::graph {
namespace {
TEST(pipeline_spec, empty_hosts_bind_every_interface_not_loopback) {
  EXPECT_FALSE(is_loopback_host(""));
  EXPECT_FALSE(binds_loopback_only("tcp://:5570"));
  EXPECT_TRUE(binds_loopback_only("ipc:///tmp/x"));
  EXPECT_TRUE(binds_loopback_only("tcp://127.0.0.1:5570"));
}
}  // namespace
}  // namespace vlcache::graph

