// TOML -> cache spec: defaults, values, and errors that name their key.

#include <gtest/gtest.h>

#include <algorithm>

#include "graph/cache_spec.hpp"

namespace vlcache::graph {
namespace {

bool has_error(const spec_result& r, const std::string& needle) {
  return std::any_of(r.errors.begin(), r.errors.end(),
                     [&](const std::string& e) { return e.find(needle) != std::string::npos; });
}

std::string all(const spec_result& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

TEST(cache_spec, empty_file_gives_documented_defaults) {
  auto r = parse_cache_spec("", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.grid.image_size, 224);
  EXPECT_EQ(r.spec.grid.patch_size, 16);
  EXPECT_FALSE(r.spec.gate.ahash);
  EXPECT_EQ(r.spec.gate.mad, std::optional<float>(3.0f));
  EXPECT_FALSE(r.spec.gate.dhash);
  EXPECT_FALSE(r.spec.index) << "no [index]: the token stores are unbounded";
}

TEST(cache_spec, reads_every_key) {
  auto r = parse_cache_spec(R"(
    [input]
    image_size = 336
    patch_size = 14
    shortest_edge = 400
    pad_to_square = true
    [gate]
    dhash = 5
    mad = 3.5
    [index]
    capacity_mb = 2
    eviction = "decayed_frequency"
    half_life = 30
  )", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.grid.count(), 576);
  EXPECT_EQ(r.spec.preprocess.shortest_edge, 400);
  EXPECT_TRUE(r.spec.preprocess.pad_to_square);
  EXPECT_FALSE(r.spec.gate.ahash) << "a [gate] table lists exactly the signatures it uses";
  EXPECT_EQ(r.spec.gate.dhash, std::optional<int>(5));
  EXPECT_EQ(r.spec.gate.mad, std::optional<float>(3.5f));
  ASSERT_TRUE(r.spec.index);
  EXPECT_EQ(r.spec.index->capacity_bytes, 2u << 20);
  EXPECT_EQ(r.spec.index->policy, eviction_policy::decayed_frequency);
  EXPECT_DOUBLE_EQ(r.spec.index->half_life, 30.0);
}

TEST(cache_spec, reports_every_error_with_its_key) {
  auto r = parse_cache_spec(R"(
    [input]
    image_size = 230
    patch_size = 16
    colour = "rgb"
    [gate]
    ahash = 70
    mad = "low"
    [index]
    eviction = "fifo"
    [extra]
  )", "inline");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(has_error(r, "[input].patch_size: image size 230 is not a multiple of patch size 16")) << all(r);
  EXPECT_TRUE(has_error(r, "[input].colour: unknown key")) << all(r);
  EXPECT_TRUE(has_error(r, "[gate].ahash: 70 is outside [0, 64]")) << all(r);
  EXPECT_TRUE(has_error(r, "[gate].mad: expected a number")) << all(r);
  EXPECT_TRUE(has_error(r, "[index].eviction: unknown eviction policy 'fifo'")) << all(r);
  EXPECT_TRUE(has_error(r, "extra: unknown key")) << all(r);
}

TEST(cache_spec, reads_the_noise_keys_and_names_them_in_errors) {
  auto r = parse_cache_spec("[gate]\nmad = 2.0\nmad_cell = 4\nnoise_factor = 3\n", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.gate.mad_cell, 4);
  EXPECT_EQ(r.spec.gate.noise_factor, std::optional<float>(3.0f));
  EXPECT_EQ(parse_cache_spec("", "inline").spec.gate.mad_cell, 1);
  EXPECT_FALSE(parse_cache_spec("", "inline").spec.gate.noise_factor);
  auto bad = parse_cache_spec("[input]\nimage_size = 224\npatch_size = 16\n[gate]\nahash = 4\nmad_cell = 32\nnoise_factor = 2\n", "inline");
  EXPECT_TRUE(has_error(bad, "[gate].mad_cell: averages the cells of the mad signature: set mad as well")) << all(bad);
  EXPECT_TRUE(has_error(bad, "[gate].noise_factor: scales the mad threshold")) << all(bad);
  auto big = parse_cache_spec("[gate]\nmad = 3.0\nmad_cell = 17\nnoise_factor = 0\n", "inline");
  EXPECT_TRUE(has_error(big, "[gate].mad_cell: is larger than [input].patch_size (16)")) << all(big);
  EXPECT_TRUE(has_error(big, "[gate].noise_factor: 0 is outside")) << all(big);
}

TEST(cache_spec, views_table_turns_view_memory_on_and_names_bad_keys) {
  auto off = parse_cache_spec("", "inline");
  ASSERT_TRUE(off.ok()) << all(off);
  EXPECT_FALSE(off.spec.views);
  auto on = parse_cache_spec("[views]\n", "inline");
  ASSERT_TRUE(on.ok()) << all(on);
  ASSERT_TRUE(on.spec.views);
  EXPECT_EQ(on.spec.views->max_views, 3);
  auto set = parse_cache_spec("[views]\nkeep = 5\ncut_share = 0.7\nmatch_share = 0.6\n", "inline");
  ASSERT_TRUE(set.ok()) << all(set);
  EXPECT_EQ(set.spec.views->max_views, 5);
  EXPECT_DOUBLE_EQ(set.spec.views->cut_share, 0.7);
  EXPECT_DOUBLE_EQ(set.spec.views->match_share, 0.6);
  auto bad = parse_cache_spec("[views]\nkeep = 0\ncut_share = 2.0\nremember = true\n", "inline");
  EXPECT_TRUE(has_error(bad, "[views].keep")) << all(bad);
  EXPECT_TRUE(has_error(bad, "[views].cut_share")) << all(bad);
  EXPECT_TRUE(has_error(bad, "[views].remember")) << all(bad);
}

TEST(cache_spec, gate_table_without_signatures_is_an_error) {
  auto r = parse_cache_spec("[gate]\n", "inline");
  EXPECT_TRUE(has_error(r, "enables no signature")) << all(r);
}

TEST(cache_spec, a_bad_gate_key_is_reported_once) {
  auto r = parse_cache_spec("[gate]\nahash = 99\n", "inline");
  ASSERT_EQ(r.errors.size(), 1u) << all(r);
  EXPECT_TRUE(has_error(r, "[gate].ahash: 99 is outside [0, 64]")) << all(r);
}

TEST(cache_spec, wrong_types_are_named) {
  auto r = parse_cache_spec("input = 3\n[index]\ncapacity_mb = true\n", "inline");
  EXPECT_TRUE(has_error(r, "input: expected a table")) << all(r);
  EXPECT_TRUE(has_error(r, "[index].capacity_mb: expected a number, got the boolean true")) << all(r);
}

TEST(cache_spec, syntax_error_names_file_and_line) {
  auto r = parse_cache_spec("[input]\nimage_size = = 3\n", "demo.toml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].rfind("demo.toml:2:", 0), 0u) << r.errors[0];
}

TEST(cache_spec, missing_file_is_named) {
  auto r = load_cache_spec("/nonexistent/pipeline.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors[0].find("/nonexistent/pipeline.toml"), std::string::npos);
}

TEST(cache_spec, shipped_cache_config_is_valid) {
  for (const char* name : {"scan.toml"}) {
    auto r = load_cache_spec(std::string(VLCACHE_CONFIGS) + "/" + name);
    EXPECT_TRUE(r.ok()) << name << ":\n" << all(r);
  }
}

}  // namespace
}  // namespace vlcache::graph
