// The CLIP vision encoder against reference outputs of a port of Hugging
// Face's eager code (tests/fixtures/make_clip_reference.py), in every key
// layout, and the invariants of sparse recompute.

#include <gtest/gtest.h>

#include <numeric>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/models/safetensors.hpp"
#include "core/models/vision_encoder.hpp"
#include "support/rel_error.hpp"

namespace vlcache {
namespace {

const std::string dir = std::string(VLCACHE_FIXTURES) + "/clip_tiny/";

using testing_support::rel_error;  // max |a - b| / max |b|, the 1e-5 the issues refer to

struct reference {
  weight_set w;
  std::vector<float> pixels;  // [2, 3, 32, 32]
  std::vector<float> frame(int i) const {
    return {pixels.begin() + i * 3072, pixels.begin() + (i + 1) * 3072};
  }
  std::vector<float> slice(const std::string& name, std::vector<std::int64_t> shape, int i,
                           int drop_rows = 0) const {
    auto all = *w.read_f32(name, shape);
    const std::int64_t per = all.size() / shape[0], row = shape.back();
    return {all.begin() + i * per + drop_rows * row, all.begin() + (i + 1) * per};
  }
};

const reference& ref() {
  static const reference r = [] {
    auto w = *weight_set::open_file(dir + "reference.safetensors");
    auto px = *w.read_f32("pixel_values", {2, 3, 32, 32});
    return reference{std::move(w), std::move(px)};
  }();
  return r;
}

std::unique_ptr<vision_encoder> load(const std::string& model) {
  auto e = vision_encoder::load(model, encoder_options{});
  EXPECT_TRUE(e) << (e ? "" : e.err().message);
  return e ? std::move(*e) : nullptr;
}

class layouts : public ::testing::TestWithParam<const char*> {};

TEST_P(layouts, full_forward_matches_hugging_face_reference) {
  auto enc = load(dir + GetParam());
  ASSERT_TRUE(enc);
  const bool llava = std::string(GetParam()) != "standalone";
  EXPECT_EQ(enc->config().projector_dim.has_value(), llava);
  EXPECT_FALSE(enc->random_weights());
  const auto f0 = ref().frame(0), f1 = ref().frame(1);
  auto out = enc->encode_full({f0.data(), f1.data()}, true);
  ASSERT_TRUE(out) << out.err().message;
  for (int i = 0; i < 2; ++i) {
    const auto& o = (*out)[i];
    // Hidden states 0 (embeddings after pre_layrnorm) .. 2 (layer 2 = -2).
    ASSERT_EQ(o.hidden_states.size(), 3u);
    for (int h = 0; h < 3; ++h)
      EXPECT_LE(rel_error(o.hidden_states[h].to_vector(),
                          ref().slice("hidden_states." + std::to_string(h), {2, 17, 32}, i)), 1e-5)
          << "hidden state " << h << " frame " << i;
    const auto want = llava ? ref().slice("features", {2, 16, 48}, i)
                            : ref().slice("hidden_states.2", {2, 17, 32}, i, 1);  // class token dropped
    EXPECT_EQ(o.features.shape(), (std::vector<std::int64_t>{16, llava ? 48 : 32}));
    EXPECT_LE(rel_error(o.features.to_vector(), want), 1e-5) << "features frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(fixtures, layouts,
                         ::testing::Values("standalone", "llava_old", "llava_sharded", "llava_new"));

// ---- sparse recompute invariants --------------------------------------

std::vector<int> all_positions() {
  std::vector<int> p(16);
  for (int i = 0; i < 16; ++i) p[i] = i;
  return p;
}

std::vector<float> full_features(vision_encoder& enc, const std::vector<float>& px) {
  return (*enc.encode_full({px.data()}))[0].features.to_vector();
}

TEST(sparse_encoder, every_token_missed_equals_the_full_forward) {
  auto enc = load(dir + "llava_new");
  const auto a = ref().frame(0), b = ref().frame(1);
  auto first = enc->encode({{0, a.data(), {}, false}});
  ASSERT_TRUE(first);
  EXPECT_TRUE((*first)[0].full) << "a stream's first frame runs in full";
  EXPECT_LE(rel_error((*first)[0].features.to_vector(), full_features(*enc, a)), 1e-5);
  auto second = enc->encode({{0, b.data(), all_positions(), false}});
  ASSERT_TRUE(second);
  EXPECT_FALSE((*second)[0].full);
  EXPECT_EQ((*second)[0].computed, 16);
  EXPECT_LE(rel_error((*second)[0].features.to_vector(), full_features(*enc, b)), 1e-5);
}

TEST(sparse_encoder, unchanged_frame_costs_nothing_and_returns_the_stored_tokens) {
  auto enc = load(dir + "llava_old");
  const auto a = ref().frame(0);
  auto first = *enc->encode({{0, a.data(), {}, false}});
  const auto bytes = enc->store_bytes(0);
  auto again = enc->encode({{0, a.data(), {}, false}});
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[0].computed, 0);
  EXPECT_EQ((*again)[0].features.to_vector(), first[0].features.to_vector()) << "bit-identical";
  EXPECT_EQ(enc->store_bytes(0), bytes);
  // Even garbage pixels are never looked at when nothing is recomputed.
  std::vector<float> garbage(3072, 1e9f);
  EXPECT_EQ((*enc->encode({{0, garbage.data(), {}, false}}))[0].features.to_vector(),
            first[0].features.to_vector());
}

TEST(sparse_encoder, partial_recompute_changes_only_the_recomputed_rows) {
  auto enc = load(dir + "llava_new");
  const auto a = ref().frame(0), b = ref().frame(1);
  auto first = (*enc->encode({{0, a.data(), {}, false}}))[0].features.to_vector();
  auto part = (*enc->encode({{0, b.data(), {2, 9}, false}}))[0];
  EXPECT_EQ(part.computed, 2);
  const auto v = part.features.to_vector();
  for (int row = 0; row < 16; ++row) {
    const bool recomputed = row == 2 || row == 9;
    const std::vector<float> old_row(first.begin() + row * 48, first.begin() + (row + 1) * 48);
    const std::vector<float> new_row(v.begin() + row * 48, v.begin() + (row + 1) * 48);
    if (recomputed) EXPECT_NE(new_row, old_row) << row;
    else EXPECT_EQ(new_row, old_row) << row;
  }
}

// Partial recompute against an independent implementation: the sparse
// semantics written plainly in Python (tests/fixtures/make_sparse_reference.py)
// over seven frames whose recompute sets differ (a part, nothing, everything,
// a part again), with pixels changing inside and outside each set.
TEST(sparse_encoder, partial_recompute_matches_the_python_reference_frame_by_frame) {
  auto ref_set = *weight_set::open_file(dir + "sparse_reference.safetensors");
  const int frames = 7, n = 16;
  const auto pixels = *ref_set.read_f32("pixel_values", {frames, 3, 32, 32});
  const auto mask = *ref_set.read_f32("recompute_mask", {frames, n});
  for (const bool aten : {false, true}) {
    encoder_options o;
    o.aten_only = aten;
    auto enc = std::move(*vision_encoder::load(dir + "llava_new", o));
    for (int f = 0; f < frames; ++f) {
      std::vector<int> positions;
      for (int p = 0; p < n; ++p)
        if (mask[f * n + p] != 0.0f) positions.push_back(p);
      auto out = enc->encode({{0, pixels.data() + f * 3072, positions, false}});
      ASSERT_TRUE(out) << out.err().message;
      EXPECT_EQ((*out)[0].full, f == 0);
      const auto expected = *ref_set.read_f32("features." + std::to_string(f), {n, 48});
      EXPECT_LE(rel_error((*out)[0].features.to_vector(), expected), 1e-5)
          << "frame " << f << ", " << positions.size() << " recomputed" << (aten ? ", ATen path" : "");
      if (f > 0 && !positions.empty() && positions.size() < static_cast<std::size_t>(n)) {
        // Stale on purpose: a partial recompute is not the full forward.
        const auto full = *ref_set.read_f32("full_features." + std::to_string(f), {n, 48});
        EXPECT_GT(rel_error((*out)[0].features.to_vector(), full), 1e-3) << "frame " << f;
      }
    }
  }
}

TEST(sparse_encoder, forced_refresh_equals_the_full_forward) {
  auto enc = load(dir + "llava_new");
  const auto a = ref().frame(0), b = ref().frame(1);
  ASSERT_TRUE(enc->encode({{0, a.data(), {}, false}}));
  ASSERT_TRUE(enc->encode({{0, b.data(), {1, 5, 6}, false}}));  // stale context now
  auto refreshed = enc->encode({{0, b.data(), {}, true}});
  ASSERT_TRUE(refreshed);
  EXPECT_TRUE((*refreshed)[0].full);
  EXPECT_LE(rel_error((*refreshed)[0].features.to_vector(), full_features(*enc, b)), 1e-5);
}

TEST(sparse_encoder, batched_equals_unbatched) {
  auto batched = load(dir + "llava_new");
  auto single = load(dir + "llava_new");
  const auto a = ref().frame(0), b = ref().frame(1);
  // Streams 1 and 2 start on different frames, then each recomputes a subset.
  ASSERT_TRUE(batched->encode({{1, a.data(), {}, false}, {2, b.data(), {}, false}}));
  ASSERT_TRUE(single->encode({{1, a.data(), {}, false}}));
  ASSERT_TRUE(single->encode({{2, b.data(), {}, false}}));
  auto together = *batched->encode({{1, b.data(), {0, 3, 4}, false}, {2, a.data(), {7, 8, 15, 11}, false}});
  auto one = *single->encode({{1, b.data(), {0, 3, 4}, false}});
  auto two = *single->encode({{2, a.data(), {7, 8, 15, 11}, false}});
  EXPECT_LE(rel_error(together[0].features.to_vector(), one[0].features.to_vector()), 1e-6);
  EXPECT_LE(rel_error(together[1].features.to_vector(), two[0].features.to_vector()), 1e-6);
  EXPECT_EQ(together[1].computed, 4);
}

// The CPU kernels (packed GEMM, batched sparse attention) against the ATen
// ops that CUDA runs, over frames with partial recompute in two streams.
TEST(sparse_encoder, cpu_kernels_match_aten_ops) {
  encoder_options aten;
  aten.aten_only = true;
  auto fast = load(dir + "llava_new");
  auto reference = std::move(*vision_encoder::load(dir + "llava_new", aten));
  const auto a = ref().frame(0), b = ref().frame(1);
  const std::vector<std::vector<frame_request>> script{
      {{0, a.data(), {}, false}, {1, b.data(), {}, false}},
      {{0, b.data(), {1, 2, 3, 14}, false}, {1, a.data(), {0, 15}, false}},
      {{0, a.data(), {5}, false}},
      {{1, b.data(), {}, true}, {0, b.data(), {6, 7, 8, 9, 10, 11, 12}, false}},
  };
  for (const auto& batch : script) {
    auto x = fast->encode(batch);
    auto y = reference->encode(batch);
    ASSERT_TRUE(x && y);
    for (std::size_t i = 0; i < batch.size(); ++i)
      EXPECT_LE(rel_error((*x)[i].features.to_vector(), (*y)[i].features.to_vector()), 1e-5);
  }
  auto fx = fast->encode_full({a.data()});
  auto fy = reference->encode_full({a.data()});
  EXPECT_LE(rel_error((*fx)[0].features.to_vector(), (*fy)[0].features.to_vector()), 1e-5);
}

TEST(sparse_encoder, store_is_reported_and_freed) {
  auto enc = load("tiny");
  ASSERT_TRUE(enc->random_weights());
  EXPECT_NE(enc->description().find("RANDOM-WEIGHT"), std::string::npos);
  const auto a = ref().frame(0);
  ASSERT_TRUE(enc->encode({{4, a.data(), {}, false}}));
  // K and V for 2 layers x 17 tokens x 32 and the output 16 x 48, f32.
  EXPECT_EQ(enc->store_bytes(4), 4u * (2 * 2 * 17 * 32 + 16 * 48));
  EXPECT_EQ(enc->state_bytes(), enc->store_bytes(4));
  EXPECT_EQ(enc->store_bytes_total(), enc->store_bytes(4));
  enc->end_stream(4);
  EXPECT_FALSE(enc->has_stream(4));
  EXPECT_EQ(enc->store_bytes(4), 0u);
}

TEST(sparse_encoder, rejects_bad_requests_without_touching_the_store) {
  auto enc = load("tiny");
  const auto a = ref().frame(0), b = ref().frame(1);
  auto first = (*enc->encode({{0, a.data(), {}, false}}))[0].features.to_vector();
  auto dup = enc->encode({{0, b.data(), {1}, false}, {0, b.data(), {2}, false}});
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.err().message.find("stream 0 has two frames"), std::string::npos);
  auto range = enc->encode({{0, b.data(), {16}, false}});
  ASSERT_FALSE(range);
  EXPECT_NE(range.err().message.find("position 16 is outside the 16 patches"), std::string::npos);
  EXPECT_FALSE(enc->encode({{0, nullptr, {1}, false}}));
  EXPECT_EQ((*enc->encode({{0, b.data(), {}, false}}))[0].features.to_vector(), first);
}

// ---- bad model input ---------------------------------------------------

std::string copy_fixture(const std::string& name) {
  namespace fs = std::filesystem;
  const auto to = fs::temp_directory_path() / ("vlcache_model_" + name);
  fs::remove_all(to);
  fs::copy(dir + "llava_new", to);
  return to.string();
}

void expect_load_error(const std::string& model, const std::vector<std::string>& needles,
                       encoder_options o = {}) {
  auto e = vision_encoder::load(model, o);
  ASSERT_FALSE(e) << model;
  for (const auto& n : needles) EXPECT_NE(e.err().message.find(n), std::string::npos) << e.err().message;
}

TEST(vision_encoder_load, errors_name_the_file_and_tensor) {
  expect_load_error("/nonexistent/model", {"/nonexistent/model", "neither a preset"});
  expect_load_error("vit-h14", {"vit-h14"});

  auto no_config = copy_fixture("no_config");
  std::filesystem::remove(no_config + "/config.json");
  expect_load_error(no_config, {"config.json: missing"});

  // A config that does not match the weights.
  auto wider = copy_fixture("wider");
  {
    std::ifstream in(wider + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.replace(text.find("\"intermediate_size\": 64"), 23, "\"intermediate_size\": 80");
    std::ofstream(wider + "/config.json") << text;
  }
  expect_load_error(wider, {"model.safetensors: tensor 'model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight' has shape [64, 32], the config needs [80, 32]"});

  // A truncated weight file.
  auto truncated = copy_fixture("truncated");
  std::filesystem::resize_file(truncated + "/model.safetensors", 6);
  expect_load_error(truncated, {"model.safetensors", "truncated"});

  auto bad_json = copy_fixture("bad_json");
  std::ofstream(bad_json + "/config.json") << "{\"vision_config\": {\"hidden_size\": 30, \"num_attention_heads\": 4}}";
  expect_load_error(bad_json, {"config.json", "not divisible"});

  encoder_options half;
  half.dtype = "f16";
  expect_load_error("tiny", {"'f16' is not supported on cpu"}, half);
  encoder_options cuda;
  cuda.device = "cuda:0";
  auto e = vision_encoder::load("tiny", cuda);
  if (!e) {
    EXPECT_NE(e.err().message.find("cuda:0"), std::string::npos) << e.err().message;
  }
  encoder_options bad_device;
  bad_device.device = "tpu";
  expect_load_error("tiny", {"device 'tpu'"}, bad_device);
}

}  // namespace
}  // namespace vlcache

namespace vlcache {
namespace {

// One byte budget for all streams: room for two states. A third stream
// evicts the least recently used one, which then runs its next frame in
// full (and equals the full forward); the total never passes the budget.
TEST(store_budget_encoder, evicts_whole_states_and_refills_in_full) {
  auto probe = load(dir + "llava_new");
  encoder_options o;
  o.store_budget.capacity_bytes = 2 * probe->state_bytes() + 10;
  o.store_budget.policy = eviction_policy::lru;
  auto enc = std::move(*vision_encoder::load(dir + "llava_new", o));
  const auto a = ref().frame(0), b = ref().frame(1);
  ASSERT_TRUE(enc->encode({{1, a.data(), {}, false}}));
  ASSERT_TRUE(enc->encode({{2, a.data(), {}, false}}));
  ASSERT_TRUE(enc->encode({{1, b.data(), {3}, false}}));  // 2 is now the least recent
  ASSERT_TRUE(enc->encode({{3, b.data(), {}, false}}));
  EXPECT_FALSE(enc->has_stream(2));
  EXPECT_EQ(enc->evictions(2).evictions, 1u);
  EXPECT_LE(enc->store_bytes_total(), o.store_budget.capacity_bytes);
  auto back = enc->encode({{2, b.data(), {5}, false}});  // asked for one token, runs all of them
  ASSERT_TRUE(back);
  EXPECT_TRUE((*back)[0].full);
  EXPECT_TRUE((*back)[0].refilled);
  EXPECT_EQ(enc->evictions(2).refills, 1u);
  EXPECT_LE(rel_error((*back)[0].features.to_vector(), full_features(*enc, b)), 1e-5);
  EXPECT_EQ(enc->evictions(1).evictions, 1u) << "1 was then the least recent";
  EXPECT_LE(enc->store_bytes_total(), o.store_budget.capacity_bytes);
  // A batch of more streams than states fit runs in turns: every frame
  // encoded (equal to the full forward: all new streams), the budget kept.
  auto three = enc->encode({{7, a.data(), {}, false}, {8, b.data(), {}, false}, {9, a.data(), {}, false}});
  ASSERT_TRUE(three) << three.err().message;
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ((*three)[1].stream, 8u);
  EXPECT_LE(rel_error((*three)[1].features.to_vector(), full_features(*enc, b)), 1e-5);
  EXPECT_LE(rel_error((*three)[2].features.to_vector(), full_features(*enc, a)), 1e-5);
  EXPECT_TRUE(enc->has_stream(9));
  EXPECT_FALSE(enc->has_stream(7)) << "the first turn's state made room for the last";
  EXPECT_LE(enc->store_bytes_peak(), o.store_budget.capacity_bytes);
  auto twice = enc->encode({{7, a.data(), {}, false}, {8, a.data(), {}, false}, {7, a.data(), {}, false}});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.err().message.find("stream 7 has two frames"), std::string::npos);
  // A budget that holds no stream at all is refused at load.
  encoder_options tiny_budget;
  tiny_budget.store_budget.capacity_bytes = 100;
  expect_load_error(dir + "llava_new", {"holds no stream", std::to_string(probe->state_bytes())}, tiny_budget);
}

// By value (the default): with room for one state, a second stream that
// saves no more than the first gets none. Its frames run in full, equal the
// full forward, and store nothing; the first keeps its state.
TEST(store_budget_encoder, a_stream_denied_a_state_gets_its_full_forward_and_stores_nothing) {
  auto probe = load(dir + "llava_new");
  encoder_options o;
  o.store_budget.capacity_bytes = probe->state_bytes() + 10;
  auto enc = std::move(*vision_encoder::load(dir + "llava_new", o));
  const auto a = ref().frame(0), b = ref().frame(1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(enc->encode({{1, a.data(), {2}, false}}));
  for (int i = 0; i < 3; ++i) {
    auto r = enc->encode({{2, i % 2 ? a.data() : b.data(), {4}, false}});
    ASSERT_TRUE(r) << r.err().message;
    EXPECT_TRUE((*r)[0].full);
    EXPECT_TRUE((*r)[0].refilled) << "counted as a frame run in full for want of a state";
    EXPECT_LE(rel_error((*r)[0].features.to_vector(), full_features(*enc, i % 2 ? a : b)), 1e-5);
    EXPECT_FALSE(enc->has_stream(2));
    EXPECT_TRUE(enc->has_stream(1));
    EXPECT_LE(enc->store_bytes_total(), o.store_budget.capacity_bytes);
  }
  EXPECT_EQ(enc->evictions(1).evictions, 0u);
  EXPECT_EQ(enc->evictions(2).refills, 3u);
  EXPECT_LE(enc->store_bytes_peak(), o.store_budget.capacity_bytes);
}

}  // namespace
}  // namespace vlcache

namespace vlcache {
namespace {

// Layer-wise recompute with the input test alone takes the compact store:
// over the reference's seven frames of partial recomputes its tokens stay
// within half precision's rounding of the same path on an f32 store.
TEST(f16_store, layerwise_input_test_alone_stays_close_to_f32) {
  auto ref_set = *weight_set::open_file(dir + "sparse_reference.safetensors");
  const auto pixels = *ref_set.read_f32("pixel_values", {7, 3, 32, 32});
  const auto mask = *ref_set.read_f32("recompute_mask", {7, 16});
  encoder_options lw;
  lw.layer_tolerance = 0.1;
  lw.attention_tolerance = 0.0;
  auto f32 = std::move(*vision_encoder::load(dir + "llava_new", lw));
  lw.store_dtype = "f16";
  auto f16 = vision_encoder::load(dir + "llava_new", lw);
  ASSERT_TRUE(f16) << f16.err().message;
  bool differed = false;
  for (int f = 0; f < 7; ++f) {
    std::vector<int> positions;
    for (int p = 0; p < 16; ++p)
      if (mask[f * 16 + p] != 0.0f) positions.push_back(p);
    auto a = f32->encode({{0, pixels.data() + f * 3072, positions, f == 0}});
    auto b = (*f16)->encode({{0, pixels.data() + f * 3072, positions, f == 0}});
    ASSERT_TRUE(a && b);
    const double err = rel_error((*b)[0].features.to_vector(), (*a)[0].features.to_vector());
    EXPECT_LE(err, 5e-3) << "frame " << f;
    differed |= err > 0.0;
  }
  EXPECT_TRUE(differed) << "the store really is f16";
  EXPECT_LT((*f16)->store_bytes(0), f32->store_bytes(0));
}

// Keys and values stored in half precision: half the store's K/V bytes, and
// the tokens within half precision's rounding of the f32 store's, frame by
// frame over partial recomputes (the Python reference's seven frames).
TEST(f16_store, halves_the_store_and_stays_close_to_f32) {
  auto ref_set = *weight_set::open_file(dir + "sparse_reference.safetensors");
  const auto pixels = *ref_set.read_f32("pixel_values", {7, 3, 32, 32});
  const auto mask = *ref_set.read_f32("recompute_mask", {7, 16});
  encoder_options half;
  half.store_dtype = "f16";
  auto f32 = load(dir + "llava_new");
  auto f16 = std::move(*vision_encoder::load(dir + "llava_new", half));
  EXPECT_NE(f16->description().find("f16 token store"), std::string::npos);
  for (int f = 0; f < 7; ++f) {
    std::vector<int> positions;
    for (int p = 0; p < 16; ++p)
      if (mask[f * 16 + p] != 0.0f) positions.push_back(p);
    auto a = f32->encode({{0, pixels.data() + f * 3072, positions, false}});
    auto b = f16->encode({{0, pixels.data() + f * 3072, positions, false}});
    ASSERT_TRUE(a && b);
    const double err = rel_error((*b)[0].features.to_vector(), (*a)[0].features.to_vector());
    EXPECT_LE(err, 5e-3) << "frame " << f;
    if (f > 0 && !positions.empty()) {
      EXPECT_GT(err, 0.0) << "frame " << f << ": the store really is f16";
    }
  }
  // K and V 2 layers x 17 tokens x 32 in 2 bytes, the output 16 x 48 in 4.
  EXPECT_EQ(f16->store_bytes(0), 2u * 2 * 2 * 17 * 32 + 4u * 16 * 48);
  EXPECT_EQ(f16->state_bytes(), f16->store_bytes(0));
  encoder_options bad = half;
  bad.layer_tolerance = 0.1;  // the attention test on (its tolerance defaults to this)
  expect_load_error(dir + "llava_new", {"store_dtype f16 does not combine with layer_tolerance",
                                        "set attention_tolerance = 0"}, bad);
  bad = half;
  bad.aten_only = true;
  expect_load_error(dir + "llava_new", {"store_dtype f16 is for the CPU kernels"}, bad);
  bad = {};
  bad.store_dtype = "f8";
  expect_load_error(dir + "llava_new", {"store_dtype 'f8' (f32, f16 or i8)"}, bad);
}

// Keys and values in 8 bits with a scale per token and head: the store's
// K/V bytes a quarter of f32's plus the scales, and the tokens close to the
// f32 store's frame by frame over partial recomputes (the Python
// reference's seven frames), alone and with layer-wise recompute's input
// test; the attention test and the ATen path refuse it by name.
TEST(i8_store, quarters_the_keys_and_values_and_stays_close_to_f32) {
  auto ref_set = *weight_set::open_file(dir + "sparse_reference.safetensors");
  const auto pixels = *ref_set.read_f32("pixel_values", {7, 3, 32, 32});
  const auto mask = *ref_set.read_f32("recompute_mask", {7, 16});
  for (const double tolerance : {0.0, 0.1}) {
    encoder_options o;
    o.layer_tolerance = tolerance;
    o.attention_tolerance = 0.0;
    auto f32 = std::move(*vision_encoder::load(dir + "llava_new", o));
    o.store_dtype = "i8";
    auto i8 = vision_encoder::load(dir + "llava_new", o);
    ASSERT_TRUE(i8) << i8.err().message;
    EXPECT_NE((*i8)->description().find("i8 token store"), std::string::npos);
    bool differed = false;
    for (int f = 0; f < 7; ++f) {
      std::vector<int> positions;
      for (int p = 0; p < 16; ++p)
        if (mask[f * 16 + p] != 0.0f) positions.push_back(p);
      auto a = f32->encode({{0, pixels.data() + f * 3072, positions, f == 0}});
      auto b = (*i8)->encode({{0, pixels.data() + f * 3072, positions, f == 0}});
      ASSERT_TRUE(a && b);
      const double err = rel_error((*b)[0].features.to_vector(), (*a)[0].features.to_vector());
      EXPECT_LE(err, 2e-2) << "tolerance " << tolerance << " frame " << f;
      differed |= err > 0.0;
    }
    EXPECT_TRUE(differed) << "the store really is int8";
    if (tolerance == 0.0) {
      // K and V 2 layers x 17 tokens x 32 in 1 byte, their scales 2 x 2
      // layers x 17 tokens x 4 heads in 4, the output 16 x 48 in 4.
      EXPECT_EQ((*i8)->store_bytes(0), 2u * 2 * 17 * 32 + 4u * 2 * 2 * 17 * 4 + 4u * 16 * 48);
      EXPECT_EQ((*i8)->state_bytes(), (*i8)->store_bytes(0));
    }
  }
  encoder_options bad;
  bad.store_dtype = "i8";
  bad.layer_tolerance = 0.1;
  expect_load_error(dir + "llava_new", {"store_dtype i8 does not combine with layer_tolerance"}, bad);
  bad.layer_tolerance = 0.0;
  bad.aten_only = true;
  expect_load_error(dir + "llava_new", {"store_dtype i8 is for the CPU kernels"}, bad);
}

// Weights in half precision in the CPU kernels: the full forward within the
// weights' rounding of f32's; with every token missed the sparse path is
// that same model's full forward (the invariant holds per weight precision);
// an unchanged frame still costs nothing.
TEST(f16_weights, stay_within_rounding_and_keep_the_invariants) {
  auto ref_set = *weight_set::open_file(dir + "sparse_reference.safetensors");
  const auto pixels = *ref_set.read_f32("pixel_values", {7, 3, 32, 32});
  encoder_options half;
  half.weight_dtype = "f16";
  auto f32 = load(dir + "llava_new");
  auto f16 = std::move(*vision_encoder::load(dir + "llava_new", half));
  EXPECT_NE(f16->description().find("f16 weights"), std::string::npos);
  const auto exact = (*f32->encode_full({pixels.data()}))[0].features.to_vector();
  const auto rounded = (*f16->encode_full({pixels.data()}))[0].features.to_vector();
  const double err = rel_error(rounded, exact);
  EXPECT_LE(err, 5e-3);
  EXPECT_GT(err, 0.0) << "the weights really are rounded";
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  ASSERT_TRUE(f16->encode({{0, pixels.data(), {}, true}}));
  auto every = f16->encode({{0, pixels.data() + 3072, all, false}});
  ASSERT_TRUE(every);
  const auto full = (*f16->encode_full({pixels.data() + 3072}))[0].features.to_vector();
  EXPECT_LE(rel_error((*every)[0].features.to_vector(), full), 1e-5);
  auto unchanged = f16->encode({{0, pixels.data() + 3072, {}, false}});
  ASSERT_TRUE(unchanged);
  EXPECT_EQ((*unchanged)[0].computed, 0);
  encoder_options bad = half;
  bad.aten_only = true;
  expect_load_error(dir + "llava_new", {"weight_dtype f16 is for the CPU kernels"}, bad);
  bad = {};
  bad.weight_dtype = "int8";
  expect_load_error(dir + "llava_new", {"weight_dtype 'int8' (f32 or f16)"}, bad);
}

}  // namespace
}  // namespace vlcache
