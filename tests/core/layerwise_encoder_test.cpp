// Layer-wise recompute (encoder_options::layer_tolerance): the invariants of
// the sparse path hold, a tolerance near zero reproduces the full forward
// whatever the gate missed, and the CPU path's incremental attention agrees
// with the ATen path, which recomputes every reused query's attention.

#include <gtest/gtest.h>

#include <cmath>

#include "core/models/safetensors.hpp"
#include "core/models/vision_encoder.hpp"
#include "support/rel_error.hpp"

namespace vlcache {
namespace {

const std::string model = std::string(VLCACHE_FIXTURES) + "/clip_tiny/llava_new";

using testing_support::rel_error;  // max |a - b| / max |b|, the 1e-5 the issues refer to

/// The fixture's seven frames (tests/fixtures/make_sparse_reference.py):
/// pixels change inside and outside every recompute set.
const std::vector<float>& frames() {
  static const std::vector<float> px = [] {
    auto w = *weight_set::open_file(std::string(VLCACHE_FIXTURES) + "/clip_tiny/sparse_reference.safetensors");
    return *w.read_f32("pixel_values", {7, 3, 32, 32});
  }();
  return px;
}
const float* frame(int i) { return frames().data() + i * 3072; }

std::unique_ptr<vision_encoder> load(double tolerance, bool aten = false, double attention = -1.0) {
  encoder_options o;
  o.layer_tolerance = tolerance;
  o.attention_tolerance = attention;
  o.aten_only = aten;
  auto e = vision_encoder::load(model, o);
  EXPECT_TRUE(e) << (e ? "" : e.err().message);
  return e ? std::move(*e) : nullptr;
}

std::vector<float> full(vision_encoder& enc, const float* px) {
  return (*enc.encode_full({px}))[0].features.to_vector();
}

/// Two streams batched over the seven frames, gate decisions of every size:
/// the same tokens recomputed and the same outputs on both encoders.
void expect_paths_agree(vision_encoder& cpu, vision_encoder& aten) {
  const std::vector<std::vector<int>> gate{{}, {1, 2}, {3}, {7, 8, 9, 10}, {0}, {15}, {4, 5}};
  for (int f = 0; f < 7; ++f) {
    auto x = cpu.encode({{0, frame(f), gate[f], false}, {1, frame(6 - f), gate[6 - f], false}});
    auto y = aten.encode({{0, frame(f), gate[f], false}, {1, frame(6 - f), gate[6 - f], false}});
    ASSERT_TRUE(x && y);
    for (int i = 0; i < 2; ++i) {
      EXPECT_LE(rel_error((*x)[i].features.to_vector(), (*y)[i].features.to_vector()), 1e-4) << "frame " << f;
      EXPECT_EQ((*x)[i].layer_tokens, (*y)[i].layer_tokens) << "frame " << f;
    }
  }
}

std::vector<int> all_positions() {
  std::vector<int> p(16);
  for (int i = 0; i < 16; ++i) p[i] = i;
  return p;
}

// attention_tolerance: -1 = as the layer tolerance, 0 = the input test only.
TEST(layerwise_encoder, every_token_missed_equals_the_full_forward) {
  for (const double attention : {-1.0, 0.0})
    for (const bool aten : {false, true}) {
      auto enc = load(0.2, aten, attention);
      ASSERT_TRUE(enc);
      for (int f = 0; f < 4; ++f) {
        auto out = enc->encode({{0, frame(f), all_positions(), false}});
        ASSERT_TRUE(out) << out.err().message;
        EXPECT_LE(rel_error((*out)[0].features.to_vector(), full(*enc, frame(f))), 1e-5)
            << "frame " << f << (aten ? ", ATen path" : "") << ", attention tolerance " << attention;
        EXPECT_EQ((*out)[0].layer_tokens, 16 * 2) << "16 tokens through both layers used";
      }
    }
}

TEST(layerwise_encoder, unchanged_frame_costs_nothing) {
  for (const double attention : {-1.0, 0.0}) {
    auto enc = load(0.05, false, attention);
    const auto first = (*enc->encode({{0, frame(0), {}, false}}))[0].features.to_vector();
    auto again = enc->encode({{0, frame(1), {}, false}});  // the gate saw nothing: pixels unread
    ASSERT_TRUE(again);
    EXPECT_EQ((*again)[0].computed, 0);
    EXPECT_EQ((*again)[0].layer_tokens, 0);
    EXPECT_EQ((*again)[0].features.to_vector(), first);
  }
}

// With a tolerance near zero every token whose input or attention moved at
// all is recomputed where it moved: the full forward, although the gate
// named only one position and every frame's pixels changed everywhere.
TEST(layerwise_encoder, tiny_tolerance_reproduces_the_full_forward) {
  for (const double attention : {-1.0, 0.0})
    for (const bool aten : {false, true}) {
      auto enc = load(1e-7, aten, attention);
      ASSERT_TRUE(enc->encode({{0, frame(0), {}, false}}));
      for (int f = 1; f < 7; ++f) {
        auto out = enc->encode({{0, frame(f), {f}, false}});
        ASSERT_TRUE(out);
        EXPECT_LE(rel_error((*out)[0].features.to_vector(), full(*enc, frame(f))), 1e-4)
            << "frame " << f << (aten ? ", ATen path" : "") << ", attention tolerance " << attention;
      }
    }
}

// The same frames at a working tolerance: far closer to the full forward
// than the fixed recompute set of the same gate decisions, and never more
// tokens recomputed than the layers x tokens of a full frame.
TEST(layerwise_encoder, closer_to_the_full_forward_than_the_fixed_set) {
  for (const double attention : {-1.0, 0.0}) {
    auto fixed = load(0.0);
    auto layered = load(0.1, false, attention);
    ASSERT_TRUE(fixed->encode({{0, frame(0), {}, false}}));
    ASSERT_TRUE(layered->encode({{0, frame(0), {}, false}}));
    double fixed_err = 0, layered_err = 0;
    for (int f = 1; f < 7; ++f) {
      const std::vector<int> gate{f, f + 4};
      auto a = (*fixed->encode({{0, frame(f), gate, false}}))[0];
      auto b = (*layered->encode({{0, frame(f), gate, false}}))[0];
      const auto want = full(*fixed, frame(f));
      fixed_err += rel_error(a.features.to_vector(), want);
      layered_err += rel_error(b.features.to_vector(), want);
      EXPECT_EQ(b.computed, 2);
      EXPECT_GE(b.layer_tokens, 2 * 2);
      EXPECT_LE(b.layer_tokens, 16 * 2);
    }
    EXPECT_LT(layered_err, 0.5 * fixed_err) << "attention tolerance " << attention;
  }
}

// The input test alone (no attention state): the CPU path, which folds the
// residual step into the next layer's test, and the ATen path decide the
// same tokens and give the same outputs, two streams batched.
TEST(layerwise_encoder, input_test_alone_cpu_and_aten_paths_agree) {
  expect_paths_agree(*load(0.05, false, 0.0), *load(0.05, true, 0.0));
}

// The CPU path keeps reused queries' attention by incremental updates; the
// ATen path recomputes it over all keys. Same decisions, same tokens.
TEST(layerwise_encoder, incremental_attention_matches_full_attention) {
  expect_paths_agree(*load(0.05), *load(0.05, true));
}

TEST(layerwise_encoder, store_holds_the_layer_state_and_bad_tolerance_is_refused) {
  auto enc = load(0.1);
  ASSERT_TRUE(enc->encode({{3, frame(0), {}, false}}));
  // Per layer (2) x 17 tokens: k, v, q, input, attention output, branch
  // output, N (32 each) and Z, m (4 heads each); output 16 x 48.
  EXPECT_EQ(enc->store_bytes(3), 4u * (2 * 17 * (7 * 32 + 2 * 4) + 16 * 48));
  EXPECT_EQ(enc->state_bytes(), enc->store_bytes(3));
  EXPECT_NE(enc->description().find("layer-wise recompute at tolerance 0.1"), std::string::npos);
  encoder_options bad;
  bad.layer_tolerance = -1;
  auto e = vision_encoder::load(model, bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.err().message.find("layer_tolerance must be a finite number >= 0"), std::string::npos);
  bad.layer_tolerance = 0;
  bad.attention_tolerance = 0.1;  // a test of layer-wise recompute, which is off
  e = vision_encoder::load(model, bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.err().message.find("attention_tolerance 0.100000 needs layer-wise recompute"), std::string::npos)
      << e.err().message;
  bad.layer_tolerance = 0.1;
  bad.attention_tolerance = std::nan("");
  e = vision_encoder::load(model, bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.err().message.find("attention_tolerance must be a finite number"), std::string::npos);
}

TEST(layerwise_encoder, input_test_alone_keeps_no_attention_state) {
  auto enc = load(0.1, false, 0.0);
  ASSERT_TRUE(enc->encode({{3, frame(0), {}, false}}));
  // Per layer (2) x 17 tokens: k, v, input, branch output (32 each); output 16 x 48.
  EXPECT_EQ(enc->store_bytes(3), 4u * (2 * 17 * (4 * 32) + 16 * 48));
  EXPECT_EQ(enc->state_bytes(), enc->store_bytes(3));
  EXPECT_EQ(enc->attention_tolerance(), 0.0);
  EXPECT_NE(enc->description().find("attention output not tracked"), std::string::npos) << enc->description();
  EXPECT_EQ(load(0.1)->attention_tolerance(), 0.1) << "by default the layer tolerance";
}

}  // namespace
}  // namespace vlcache
