// Pipelines built from inline TOML and run in-process: per-stream order and
// the accounting identity with 4 cameras, and under an overloaded encoder
// with each drop policy.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/pipeline_runner.hpp"
#include "graph/pipeline_spec.hpp"

namespace vlcache::graph {
namespace {

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
  const auto path = (std::filesystem::temp_directory_path() / "vlcache_run_summary.json").string();
  std::filesystem::remove(path);
  EXPECT_EQ(run_pipeline(r.spec, {path, false}), expect_rc);
  std::ifstream f(path);
  return nlohmann::json::parse(f);
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
    [encoder]
    model = "tiny"
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

}  // namespace
}  // namespace vlcache::graph
