// Pipelines built from inline TOML and run in-process: per-stream order and
// the accounting identity with 4 cameras, and under an overloaded encoder
// with each drop policy.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include <mutex>

#include "connectors/video_reader.hpp"
#include "core/models/cache_step.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "graph/pipeline_runner.hpp"
#include "graph/pipeline_spec.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache::graph {
namespace {

/// A file in the temporary folder of this process alone: CTest runs the
/// cases side by side, each in its own process.
std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("vlcache_" + std::to_string(::getpid()) + "_" + name)).string();
}


std::string cameras(int n, int frames) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += "[[camera]]\nname = \"c" + std::to_string(i) + "\"\nsource = \"" VLCACHE_SAMPLE_VIDEO "\"\nstart_frame = " +
         std::to_string(150 * i) + "\nmax_frames = " + std::to_string(frames) + "\n";
  return s;
}

nlohmann::json run(const std::string& toml, int expect_rc = 0) {
  auto r = parse_pipeline(toml, "inline");
  std::string errors;
  for (const auto& e : r.errors) errors += e + "\n";
  EXPECT_TRUE(r.ok()) << errors;
  const auto path = scratch("run_summary.json");
  std::filesystem::remove(path);
  run_options options;
  options.summary_json = path;
  options.progress = false;
  EXPECT_EQ(run_pipeline(r.spec, options), expect_rc);
  nlohmann::json summary = nlohmann::json::parse(std::ifstream(path));
  std::filesystem::remove(path);
  return summary;
}

void expect_accounted(const nlohmann::json& s) {
  EXPECT_TRUE(s["accounted"].get<bool>());
  EXPECT_EQ(s["out_of_order"].get<int>(), 0);
  for (const auto& st : s["streams"]) {
    const auto read = st["frames_read"].get<std::uint64_t>();
    const auto sum = st["frames_encoded"].get<std::uint64_t>() + st["frames_failed"].get<std::uint64_t>() +
                     st["dropped"]["oldest"].get<std::uint64_t>() + st["dropped"]["newest"].get<std::uint64_t>();
    EXPECT_EQ(read, sum) << st.dump();
  }
}

TEST(pipeline_run, four_cameras_every_frame_encoded_in_order) {
  const auto s = run(R"(
    [pipeline]
    drop_policy = "block"
    max_in_flight = 3
    shards = 4
    progress_seconds = 0
    [input]
    image_size = 32
    patch_size = 8
    [gate]  # the plain gate, as the cache step here runs it
    mad = 3.0
    [encoder]
    model = "tiny"
    layer_tolerance = 0.0  # the fixed recompute set, as the cache step here runs it
    batch_tokens = 16
    [[sink]]
    kind = "jsonl"
    path = "/tmp/vlcache_four.jsonl"
  )" + cameras(4, 15));
  expect_accounted(s);
  ASSERT_EQ(s["streams"].size(), 4u);
  for (const auto& st : s["streams"]) EXPECT_EQ(st["frames_encoded"].get<int>(), 15);
  // The sink saw every frame, each stream in order.
  std::ifstream lines("/tmp/vlcache_four.jsonl");
  std::map<std::string, std::int64_t> last;
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    auto j = nlohmann::json::parse(line);
    const auto stream = j["stream"].get<std::string>();
    const auto seq = j["seq"].get<std::int64_t>();
    if (last.count(stream)) {
      EXPECT_GT(seq, last[stream]) << stream;
    }
    last[stream] = seq;
    EXPECT_EQ(j["tokens"].get<int>(), 16);
  }
  EXPECT_EQ(count, 60);
}

using token_map = std::map<std::pair<std::string, std::uint64_t>, std::vector<float>>;

/// Runs the pipeline, keeping every frame's tokens by (camera, seq).
token_map run_keeping_tokens(const pipeline_spec& spec, const std::string& summary_json = "") {
  std::mutex m;
  token_map piped;
  run_options options;
  options.summary_json = summary_json;
  options.progress = false;
  options.on_tokens = [&](const std::string& stream, std::uint64_t seq, const tensor_handle& t) {
    std::lock_guard<std::mutex> lock(m);
    piped[{stream, seq}] = t.to_vector();
  };
  EXPECT_EQ(run_pipeline(spec, options), 0);
  return piped;
}

/// The same frames through core's step, one camera after the other (stream
/// id = camera index): each frame's tokens must equal the pipeline's.
/// `seen` gets each frame's plan; returns the frames read per camera.
std::vector<std::uint64_t> expect_tokens_of(cache_step& step, const pipeline_spec& spec, const token_map& piped,
                                            const std::function<void(const step_plan&)>& seen = {}) {
  auto encoder = std::move(*vision_encoder::load("tiny", encoder_options{}));
  const auto engine = *signature_engine::make(spec.cache.grid);
  std::vector<std::uint64_t> frames;
  for (std::size_t c = 0; c < spec.cameras.size(); ++c) {
    const auto& cam = spec.cameras[c];
    auto video = std::move(*connectors::video_reader::open({cam.source, cam.fps, cam.start_frame, cam.max_frames}));
    std::uint64_t seq = 0;
    for (auto frame = video->read(); frame; frame = video->read(), ++seq) {
      auto pre = preprocess(frame->view, spec.cache.preprocess);
      EXPECT_TRUE(pre);
      if (!pre) break;
      auto sigs = engine.compute(image_view{pre->rgb.data(), pre->size, pre->size, 3, 1, 0, channel_order::rgb});
      std::vector<step_plan> plans;
      auto out = step.run(*encoder, {{static_cast<stream_id>(c), seq, &*sigs, pre->pixels.data()}}, &plans);
      EXPECT_TRUE(out) << (out ? "" : out.err().message);
      if (!out) break;
      if (seen) seen(plans[0]);
      const auto expected_tokens = (*out)[0].features.to_vector();
      const auto it = piped.find({cam.name, seq});
      EXPECT_NE(it, piped.end()) << cam.name << " frame " << seq;
      if (it == piped.end() || it->second.size() != expected_tokens.size()) {
        ADD_FAILURE() << cam.name << " frame " << seq << ": no tokens of that size from the pipeline";
        continue;
      }
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < expected_tokens.size(); ++i) {
        worst = std::max(worst, std::fabs(double(it->second[i]) - expected_tokens[i]));
        scale = std::max(scale, std::fabs(double(expected_tokens[i])));
      }
      EXPECT_LE(worst, 1e-5 * scale) << cam.name << " frame " << seq;
    }
    frames.push_back(seq);
  }
  return frames;
}

// The pipeline (sharded gate, a planner per camera, batched encoder) and
// core's cache step as the benchmarks run it give the same tokens for the
// same frames, with a budget that defers misses, a token age and refreshes.
TEST(pipeline_run, tokens_equal_the_cache_step_the_benchmarks_run) {
  const std::string toml = R"(
    [pipeline]
    drop_policy = "block"
    max_in_flight = 4
    shards = 3
    progress_seconds = 0
    [input]
    image_size = 32
    patch_size = 8
    [gate]
    mad = 2.0
    [drift]
    max_tokens_per_frame = 3
    max_token_age = 6
    refresh_interval = 11
    [encoder]
    model = "tiny"
    layer_tolerance = 0.0  # the fixed recompute set, as the cache step here runs it
    batch_tokens = 24
    [[sink]]
    kind = "jsonl"
    path = "/tmp/vlcache_cache_step.jsonl"
  )" + cameras(2, 24);
  auto parsed = parse_pipeline(toml, "inline");
  ASSERT_TRUE(parsed.ok());
  const auto& spec = parsed.spec;
  const auto piped = run_keeping_tokens(spec);
  ASSERT_EQ(piped.size(), 48u);

  auto step = *cache_step::make(spec.cache.grid, spec.cache.gate, spec.drift);
  int deferred = 0, partial = 0;
  const auto frames = expect_tokens_of(step, spec, piped, [&](const step_plan& p) {
    deferred += p.plan.deferred;
    partial += !p.plan.full && !p.plan.positions.empty();
  });
  EXPECT_EQ(frames, (std::vector<std::uint64_t>{24, 24}));
  // The run exercised what differs between the old copies of the step.
  EXPECT_GT(deferred, 0) << "no miss was deferred by the budget";
  EXPECT_GT(partial, 0) << "no frame was recomputed in part";
}

// View memory across the actors: the shards, the source's drift state and
// the encoder follow a camera's views as core's cache step does, on a
// patrol clip (three presets of the sample video, 20 frames each, cycled):
// the same tokens for every frame, and the views left are found again.
TEST(pipeline_run, view_memory_gives_the_tokens_of_the_cache_step) {
  const std::string clip = scratch("patrol_test.avi");
  const std::string make = std::string(VLCACHE_SCRIPTS) + "/make_patrol_clip.sh " + clip + " 100 20 > /dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  const std::string summary = scratch("views_summary.json");
  const std::string toml = R"(
    [pipeline]
    drop_policy = "block"
    max_in_flight = 3
    shards = 3
    progress_seconds = 0
    [input]
    image_size = 32
    patch_size = 8
    [gate]  # the plain gate, as the cache step here runs it
    mad = 3.0
    [views]
    keep = 2
    [encoder]
    model = "tiny"
    layer_tolerance = 0.0  # the fixed recompute set, as the cache step here runs it
    batch_tokens = 24
    [[camera]]
    name = "ptz0"
    source = ")" + clip + R"("
    [[camera]]
    name = "ptz1"
    source = ")" + clip + R"("
    start_frame = 10
  )";
  auto parsed = parse_pipeline(toml, "inline");
  ASSERT_TRUE(parsed.ok()) << parsed.errors.front();
  const auto& spec = parsed.spec;
  ASSERT_TRUE(spec.cache.views);
  const auto piped = run_keeping_tokens(spec, summary);
  ASSERT_EQ(piped.size(), 190u);

  auto step = *cache_step::make(spec.cache.grid, spec.cache.gate, spec.drift, *spec.cache.views);
  EXPECT_EQ(expect_tokens_of(step, spec, piped), (std::vector<std::uint64_t>{100, 90}));
  const std::uint64_t restored = step.views(0)->restored() + step.views(1)->restored();
  EXPECT_GE(restored, 3u) << "the patrol goes back to kept views";
  // The pipeline counted the same cuts and restores per camera.
  const auto j = nlohmann::json::parse(std::ifstream(summary));
  std::uint64_t piped_restored = 0;
  for (const auto& st : j["streams"]) {
    const stream_id c = st["name"] == "ptz0" ? 0 : 1;
    EXPECT_EQ(st["view_cuts"].get<std::uint64_t>(), step.views(c)->cuts()) << st["name"];
    piped_restored += st["views_restored"].get<std::uint64_t>();
  }
  EXPECT_EQ(piped_restored, restored);
  EXPECT_TRUE(j["accounted"].get<bool>());
  std::filesystem::remove(clip);
  std::filesystem::remove(summary);
}

// A paced camera reads at its rate (a file behaves like a live camera) and,
// with the block policy, does not stall when a tick finds no credit.
TEST(pipeline_run, paced_camera_reads_at_its_rate_and_never_stalls) {
  const auto started = std::chrono::steady_clock::now();
  const auto s = run(R"(
    [pipeline]
    drop_policy = "block"
    max_in_flight = 1
    progress_seconds = 0
    [input]
    image_size = 32
    patch_size = 8
    [gate]  # the plain gate, as the cache step here runs it
    mad = 3.0
    [encoder]
    model = "tiny"
    layer_tolerance = 0.0  # the fixed recompute set, as the cache step here runs it
    [[sink]]
    kind = "jsonl"
    path = "/tmp/vlcache_paced.jsonl"
    [[camera]]
    name = "paced"
    source = ")" VLCACHE_SAMPLE_VIDEO R"("
    max_frames = 12
    pace_fps = 40
  )");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  expect_accounted(s);
  EXPECT_EQ(s["streams"][0]["frames_encoded"].get<int>(), 12);
  EXPECT_GE(seconds, 11 / 40.0) << "12 frames at 40 per second take at least 11 intervals";
}

class overloaded : public ::testing::TestWithParam<const char*> {};

// The ViT-B/16 shape takes ~100+ ms a frame here while decoding takes ~5 ms:
// the cameras outrun the encoder and the drop policy has to act.
TEST_P(overloaded, accounting_holds_with_each_drop_policy) {
  const std::string policy = GetParam();
  const auto s = run(R"(
    [pipeline]
    max_in_flight = 1
    queue = 1
    drop_policy = ")" + policy + R"("
    progress_seconds = 0
    [encoder]
    model = "vit-b16"
    batch_tokens = 1
    [[sink]]
    kind = "jsonl"
    path = "/tmp/vlcache_overloaded.jsonl"
  )" + cameras(2, 12));
  expect_accounted(s);
  std::uint64_t dropped = 0, encoded = 0;
  for (const auto& st : s["streams"]) {
    dropped += st["dropped"]["oldest"].get<std::uint64_t>() + st["dropped"]["newest"].get<std::uint64_t>();
    encoded += st["frames_encoded"].get<std::uint64_t>();
  }
  if (policy == "block") {
    EXPECT_EQ(dropped, 0u);
    EXPECT_EQ(encoded, 24u);
  } else {
    EXPECT_GT(dropped, 0u) << "the encoder should have fallen behind";
    EXPECT_GT(encoded, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(policies, overloaded, ::testing::Values("block", "drop_oldest", "drop_newest"));

// The tiny model's pipeline without cameras; files read no faster than it encodes.
const std::string tiny_blocking = R"(
    [pipeline]
    drop_policy = "block"
    max_in_flight = 2
    progress_seconds = 0
    [input]
    image_size = 32
    patch_size = 8
    [encoder]
    model = "tiny"
    layer_tolerance = 0.0  # the fixed recompute set, as the cache step here runs it
    batch_tokens = 16
  )";

// Four cameras under a store budget that holds two of their states
// ([index].capacity_mb): whole states are given up by the policy and refilled
// in full (by value: the cameras without a state run in full), every frame
// is encoded and accounted, the budget is never passed
// (the encoder test checks the refilled tokens against the full forward).
TEST(pipeline_run, store_budget_evicts_and_refills_without_losing_frames) {
  auto probe = std::move(*vision_encoder::load("tiny", encoder_options{}));
  const double state_mb = static_cast<double>(probe->state_bytes()) / (1 << 20);
  const std::string body = tiny_blocking;
  for (const std::string policy : {"value", "lru", "lfu", "decayed_frequency"}) {
    const auto s = run(body + "[index]\ncapacity_mb = " + std::to_string(2.5 * state_mb) + "\neviction = \"" +
                       policy + "\"\nhalf_life = 4\n" + cameras(4, 12));
    expect_accounted(s);
    for (const auto& st : s["streams"]) EXPECT_EQ(st["frames_encoded"].get<int>(), 12) << policy;
    const auto& store = s["token_store"];
    // By value, cameras that save alike keep their states: the others run
    // in full (refills) rather than evict them.
    if (policy != "value") {
      EXPECT_GT(store["evictions"].get<int>(), 0) << policy;
    }
    EXPECT_GT(store["refills"].get<int>(), 0) << policy;
    EXPECT_LE(store["peak_bytes"].get<std::uint64_t>(), store["capacity_bytes"].get<std::uint64_t>()) << policy;
    EXPECT_GE(store["peak_bytes"].get<std::uint64_t>(), 2 * store["state_bytes"].get<std::uint64_t>()) << policy;
    std::uint64_t per_stream = 0;
    for (const auto& st : s["streams"]) per_stream += st["store_evictions"].get<std::uint64_t>();
    EXPECT_EQ(per_stream, store["evictions"].get<std::uint64_t>());
  }
  const auto unbounded = run(body + cameras(4, 12));
  EXPECT_EQ(unbounded["token_store"]["evictions"].get<int>(), 0);
  EXPECT_EQ(unbounded["token_store"]["capacity_bytes"].get<int>(), 0);
}

// Online fidelity: with a deliberately loose gate (mean absolute difference
// up to 60 reused) the cached tokens drift from the full forward; checks
// every 2nd frame (a budget of 100x the encoder's time: a cached frame costs
// far less than its check) notice and refresh the streams, and the frames
// stay accounted. With a strict gate the same checks pass without refreshes.
TEST(pipeline_run, fidelity_checks_refresh_a_stream_whose_tokens_drifted) {
  const std::string body = tiny_blocking + R"(
    [fidelity]
    shadow_every = 2
    max_share = 100
    min_cosine = 0.9999
  )";
  const auto loose = run(body + "[gate]\nmad = 60\n" + cameras(2, 20));
  expect_accounted(loose);
  ASSERT_TRUE(loose.contains("fidelity")) << loose.dump();
  EXPECT_GE(loose["fidelity"]["checks"].get<int>(), 10);
  EXPECT_GT(loose["fidelity"]["refreshes"].get<int>(), 0) << loose["fidelity"].dump();
  EXPECT_LT(loose["fidelity"]["cosine_min"].get<double>(), 0.9999);
  for (const auto& st : loose["streams"]) EXPECT_GT(st["fidelity"]["checks"].get<int>(), 0);
  const auto strict = run(body + "[gate]\nmad = 0\n" + cameras(2, 20));
  expect_accounted(strict);
  EXPECT_EQ(strict["fidelity"]["refreshes"].get<int>(), 0) << strict["fidelity"].dump();
  EXPECT_GT(strict["fidelity"]["cosine_mean"].get<double>(), 0.99999);
}

}  // namespace
}  // namespace vlcache::graph
