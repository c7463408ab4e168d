// [fidelity] target and profiles: what a pipeline with no tuning keys runs,
// what a key set by hand keeps, and profiles refused for another model shape.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "graph/fidelity_profile.hpp"
#include "graph/pipeline_spec.hpp"

namespace vlcache::graph {
namespace {

const std::string video = VLCACHE_SAMPLE_VIDEO;
const std::string tiny = "[input]\nimage_size = 32\npatch_size = 8\n[encoder]\nmodel = \"tiny\"\n";
const std::string cam = "[[camera]]\nsource = \"" + video + "\"\n";

std::string all(const pipeline_result& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

/// A profile for the tiny preset (32/8, width 32, 1 of 2 layers... as its config says).
fidelity_profile tiny_profile() {
  fidelity_profile p;
  p.model = "tiny";
  p.shape = *shape_of_model("tiny");
  p.target.cosine = 0.995;
  p.gate.mad = 5.0f;
  p.gate.mad_cell = 2;
  p.attention_test = false;
  p.ladder = {0.3, 0.1, 0.02};
  p.start = 1;
  return p;
}

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(fidelity_spec, no_tuning_keys_runs_the_controller_layer_wise_with_checks) {
  auto r = parse_pipeline(tiny + cam, "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  const auto& s = r.spec;
  ASSERT_TRUE(s.fidelity_control.controller.has_value());
  const auto& c = *s.fidelity_control.controller;
  EXPECT_DOUBLE_EQ(c.target.cosine, 0.999);
  EXPECT_DOUBLE_EQ(s.encoder.options.layer_tolerance, c.ladder[static_cast<std::size_t>(c.start)]);
  EXPECT_DOUBLE_EQ(s.encoder.options.layer_tolerance, 0.05);
  EXPECT_DOUBLE_EQ(s.encoder.options.attention_tolerance, 0.0) << "random presets: the input test alone";
  EXPECT_EQ(s.fidelity.every, 5) << "the controller's sensor";
  EXPECT_TRUE(s.fidelity_control.profile.empty());
  EXPECT_TRUE(s.cache.gate.noise_factor.has_value()) << "without a profile or [gate]: the noise-robust gate";
  EXPECT_EQ(s.cache.gate.mad_cell, 4);
  EXPECT_EQ(s.fidelity_control.answer_audit_every, 20);
}

TEST(fidelity_spec, a_tolerance_set_by_hand_is_never_moved) {
  auto r = parse_pipeline(tiny + "layer_tolerance = 0.2\n" + cam, "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_FALSE(r.spec.fidelity_control.controller.has_value());
  EXPECT_DOUBLE_EQ(r.spec.encoder.options.layer_tolerance, 0.2);
  EXPECT_EQ(r.spec.fidelity.every, 0) << "no checks unless asked for";
  EXPECT_TRUE(r.spec.cache.gate.noise_factor.has_value()) << "the gate is [gate], else the profile's, else the noise-robust one";
  auto fixed = parse_pipeline(tiny + "layer_tolerance = 0\n" + cam, "inline");
  ASSERT_TRUE(fixed.ok()) << all(fixed);
  EXPECT_FALSE(fixed.spec.fidelity_control.controller.has_value());
  EXPECT_DOUBLE_EQ(fixed.spec.encoder.options.layer_tolerance, 0.0) << "0 by hand: the fixed recompute set";
  auto off = parse_pipeline(tiny + cam + "[fidelity]\ncontrol = false\n", "inline");
  ASSERT_TRUE(off.ok()) << all(off);
  EXPECT_FALSE(off.spec.fidelity_control.controller.has_value());
}

TEST(fidelity_spec, a_profile_sets_gate_mode_ladder_and_target_unless_set_by_hand) {
  const auto path = write("vlcache_tiny_profile.toml", profile_toml(tiny_profile()));
  auto r = parse_pipeline(tiny + "profile = \"" + path + "\"\n" + cam, "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  const auto& s = r.spec;
  ASSERT_TRUE(s.fidelity_control.controller.has_value());
  EXPECT_EQ(s.fidelity_control.controller->ladder, (std::vector<double>{0.3, 0.1, 0.02}));
  EXPECT_DOUBLE_EQ(s.encoder.options.layer_tolerance, 0.1) << "the profile's start rung";
  EXPECT_DOUBLE_EQ(s.fidelity_control.controller->target.cosine, 0.995) << "the profile's calibrated target";
  EXPECT_FLOAT_EQ(s.cache.gate.mad.value_or(0), 5.0f);
  EXPECT_EQ(s.cache.gate.mad_cell, 2);
  auto hand = parse_pipeline(tiny + "profile = \"" + path + "\"\n" + cam + "[gate]\nmad = 3.0\n[fidelity]\ntarget = 0.9995\n",
                             "inline");
  ASSERT_TRUE(hand.ok()) << all(hand);
  EXPECT_EQ(hand.spec.cache.gate.mad_cell, 1) << "a [gate] table by hand wins";
  EXPECT_DOUBLE_EQ(hand.spec.fidelity_control.controller->target.cosine, 0.9995);
}

TEST(fidelity_spec, a_profile_for_another_model_shape_is_refused_naming_both) {
  auto p = tiny_profile();
  p.shape = *shape_of_model("vit-b16");
  const auto path = write("vlcache_vitb_profile.toml", profile_toml(p));
  auto r = parse_pipeline(tiny + "profile = \"" + path + "\"\n" + cam, "inline");
  ASSERT_FALSE(r.ok());
  const auto e = all(r);
  EXPECT_NE(e.find("[encoder].profile"), std::string::npos) << e;
  EXPECT_NE(e.find(shape_of_model("vit-b16")->describe()), std::string::npos) << e;
  EXPECT_NE(e.find(shape_of_model("tiny")->describe()), std::string::npos) << e;
  auto missing = parse_pipeline(tiny + "profile = \"/nonexistent/p.toml\"\n" + cam, "inline");
  EXPECT_NE(all(missing).find("/nonexistent/p.toml does not exist"), std::string::npos) << all(missing);
}

TEST(fidelity_spec, a_damaged_profile_names_the_file_and_key) {
  const auto path = write("vlcache_bad_profile.toml",
                          "[profile]\nimage_size = 32\npatch_size = 8\nhidden_size = 32\nlayers = 1\n"
                          "[gate]\nmad = 3.0\n[ladder]\ntolerances = [0.1, 0.2]\n");
  auto p = load_fidelity_profile(path);
  ASSERT_FALSE(p);
  EXPECT_NE(p.err().message.find(path), std::string::npos) << p.err().message;
  EXPECT_NE(p.err().message.find("cheapest (largest) to safest"), std::string::npos) << p.err().message;
  const auto round = write("vlcache_round_profile.toml", profile_toml(tiny_profile()));
  auto back = load_fidelity_profile(round);
  ASSERT_TRUE(back) << back.err().message;
  EXPECT_EQ(back->ladder, tiny_profile().ladder);
  EXPECT_EQ(back->start, 1);
  EXPECT_FALSE(back->attention_test);
}

}  // namespace
}  // namespace vlcache::graph

namespace vlcache::graph {
namespace {

TEST(input_from_model, without_an_input_table_the_grid_is_the_models_own) {
  const std::string model = std::string(VLCACHE_CONFIGS) + "/../models/tiny-llava-scenes";
  auto r = parse_pipeline("[encoder]\nmodel = \"" + model + "\"\n[[camera]]\nsource = \"" + video + "\"\n", "inline");
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.spec.cache.grid.image_size, 160);
  EXPECT_EQ(r.spec.cache.grid.patch_size, 16);
  EXPECT_EQ(r.spec.cache.preprocess.image_size, 160);
  auto preset = parse_pipeline("[encoder]\nmodel = \"tiny\"\n" + cam, "inline");
  ASSERT_TRUE(preset.ok()) << all(preset);
  EXPECT_EQ(preset.spec.cache.grid.image_size, 32);
}

TEST(input_from_model, an_input_table_that_differs_from_the_model_is_refused_naming_both) {
  const std::string model =
      std::filesystem::path(std::string(VLCACHE_CONFIGS) + "/../models/tiny-llava-scenes").lexically_normal().string();
  auto r = parse_pipeline("[input]\nimage_size = 224\npatch_size = 16\n[encoder]\nmodel = \"" + model + "\"\n" + cam,
                          "inline");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(all(r).find("[input]: 224/16, but the model '" + model + "' takes 160/16"), std::string::npos) << all(r);
}

}  // namespace
}  // namespace vlcache::graph
