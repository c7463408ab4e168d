// Config errors a person can act on: where, what was received, what was meant.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "connectors/curve_keys.hpp"
#include "graph/did_you_mean.hpp"
#include "graph/pipeline_spec.hpp"

namespace vlcache::graph {
namespace {

namespace fs = std::filesystem;

std::string all(const pipeline_result& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

const std::string video = VLCACHE_SAMPLE_VIDEO;
const std::string cam = "[[camera]]\nsource = \"" + video + "\"\n";

/// A fresh folder under the temp directory, removed with the test.
struct scratch {
  fs::path dir;
  explicit scratch(const std::string& name) : dir(fs::temp_directory_path() / ("vlcache_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~scratch() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir / file) << text; }
};

TEST(did_you_mean, names_the_nearest_key_within_a_few_edits) {
  EXPECT_EQ(edit_distance("mda", "mad"), 1);  // a swap of neighbours is one edit
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(nearest_name("mda", {"ahash", "mad", "mad_cell"}), "mad");
  EXPECT_EQ(nearest_name("max_new_token", {"max_batch", "max_new_tokens"}), "max_new_tokens");
  EXPECT_FALSE(nearest_name("colour", {"ahash", "mad"}));
  EXPECT_EQ(did_you_mean("zzz", {"mad"}), "");
}

TEST(config_errors, a_typo_comes_first_with_its_line_column_and_the_key_meant) {
  auto r = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[gate]\nmda = 3.0\n" + cam, "typo.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors.front(), "typo.toml:4:7: [gate].mda: unknown key; did you mean 'mad'?") << all(r);
  // The gate then sets no signature: that follows from the typo and is not reported over it.
  EXPECT_EQ(all(r).find("enables no signature"), std::string::npos) << all(r);
}

TEST(config_errors, a_value_of_the_wrong_type_is_named_with_its_toml_type) {
  auto r = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[llm]\nmax_new_tokens = \"4\"\n" + cam, "t.toml");
  EXPECT_NE(all(r).find("t.toml:4:18: [llm].max_new_tokens: expected an integer, got the string \"4\""),
            std::string::npos)
      << all(r);
  auto b = parse_pipeline("[encoder]\nmodel = \"tiny\"\n[[camera]]\nsource = \"" + video + "\"\nloop = 1\n", "t.toml");
  EXPECT_NE(all(b).find("[camera[0]].loop: expected true or false, got the integer 1"), std::string::npos) << all(b);
}

TEST(config_errors, errors_found_after_parsing_still_carry_the_line) {
  auto r = parse_pipeline("[encoder]\nmodel = \"tiny\"\n\n[[camera]]\nsource = \"/no/such/video.mp4\"\n", "t.toml");
  EXPECT_NE(all(r).find("t.toml:5:10: [camera[0]].source: file /no/such/video.mp4 does not exist"),
            std::string::npos)
      << all(r);
}

TEST(config_errors, relative_paths_resolve_from_the_config_folder_and_errors_print_them_absolute) {
  scratch s("relative_paths");
  fs::copy_file(video, s.dir / "clip.avi");
  s.write("ok.toml", "[encoder]\nmodel = \"tiny\"\n[[camera]]\nsource = \"clip.avi\"\n");
  s.write("bad.toml", "[encoder]\nmodel = \"tiny\"\n[[camera]]\nsource = \"sub/missing.avi\"\n");
  const auto cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());  // anywhere but the config's folder
  auto ok = load_pipeline((s.dir / "ok.toml").string());
  auto bad = load_pipeline((s.dir / "bad.toml").string());
  fs::current_path(cwd);
  ASSERT_TRUE(ok.ok()) << all(ok);
  EXPECT_EQ(ok.spec.cameras[0].source, (s.dir / "clip.avi").string());
  EXPECT_NE(all(bad).find("file " + (s.dir / "sub/missing.avi").string() + " does not exist"), std::string::npos)
      << all(bad);
}

TEST(config_errors, a_folder_without_config_json_is_called_a_folder_not_a_preset) {
  scratch s("no_config_json");
  auto r = parse_pipeline("[encoder]\nmodel = \"" + s.dir.string() + "\"\n" + cam, "t.toml");
  EXPECT_NE(all(r).find("[encoder].model: folder " + s.dir.string() + " has no config.json"), std::string::npos)
      << all(r);
  EXPECT_EQ(all(r).find("preset '"), std::string::npos) << all(r);
}

/// A model folder with the shipped model's config and a processor of its own.
std::string model_with_processor(const scratch& s, const std::string& processor) {
  const fs::path shipped = fs::path(VLCACHE_CONFIGS) / ".." / "models" / "tiny-llava-scenes";
  fs::copy_file(shipped / "config.json", s.dir / "config.json");
  s.write("preprocessor_config.json", processor);
  return s.dir.string();
}

TEST(input_from_model, mean_std_and_resize_come_from_the_models_processor) {
  scratch s("processor");
  const auto model = model_with_processor(
      s, R"({"size": {"shortest_edge": 176}, "crop_size": {"height": 160, "width": 160},
             "image_mean": [0.5, 0.5, 0.5], "image_std": [0.25, 0.5, 1.0], "resample": 3})");
  auto r = parse_pipeline("[encoder]\nmodel = \"" + model + "\"\n[llm]\nenabled = false\n" + cam, "t.toml");
  ASSERT_TRUE(r.ok()) << all(r);
  const auto& p = r.spec.cache.preprocess;
  EXPECT_EQ(p.image_size, 160);
  EXPECT_EQ(p.shortest_edge, 176);
  EXPECT_FLOAT_EQ(p.mean[0], 0.5f);
  EXPECT_FLOAT_EQ(p.std[2], 1.0f);
}

TEST(input_from_model, a_processor_that_disagrees_with_the_model_is_refused_naming_both) {
  scratch s("processor_mismatch");
  const auto model = model_with_processor(s, R"({"crop_size": {"height": 224, "width": 224}})");
  auto r = parse_pipeline("[encoder]\nmodel = \"" + model + "\"\n[llm]\nenabled = false\n" + cam, "t.toml");
  EXPECT_NE(all(r).find("crop_size is 224, but the model's config.json has image_size 160"), std::string::npos)
      << all(r);
  scratch b("processor_bilinear");
  const auto bilinear = model_with_processor(b, R"({"resample": 2})");
  auto q = parse_pipeline("[encoder]\nmodel = \"" + bilinear + "\"\n[llm]\nenabled = false\n" + cam, "t.toml");
  EXPECT_NE(all(q).find("resample is 2; vlcache resizes bicubic (3) only"), std::string::npos) << all(q);
}

TEST(security_spec, a_keyed_pipeline_view_needs_a_token_even_on_loopback) {
  scratch s("keyed_view");
  ASSERT_TRUE(connectors::write_key_pair(*connectors::generate_key_pair(), (s.dir / "pipeline").string()));
  ASSERT_TRUE(connectors::write_key_pair(*connectors::generate_key_pair(), (s.dir / "camera").string()));
  const std::string keyed = "[encoder]\nmodel = \"tiny\"\n[security]\nsecret_key = \"pipeline.key\"\n"
                            "allowed_clients = \"camera.pub\"\n[view]\nhttp = \"127.0.0.1:8080\"\n" + cam;
  s.write("keyed.toml", keyed);
  auto r = load_pipeline((s.dir / "keyed.toml").string());
  EXPECT_NE(all(r).find("[view].http: the pipeline's sockets need CURVE keys ([security]), so its view needs a token"),
            std::string::npos)
      << all(r);
}

}  // namespace
}  // namespace vlcache::graph
