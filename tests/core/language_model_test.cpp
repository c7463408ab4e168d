// The LLaMA decoder, tokenizer and LLaVA prompt against reference outputs of
// a port of Hugging Face's eager code (tests/fixtures/make_llama_reference.py,
// which decodes without a KV cache), and the invariants of KV reuse.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <unistd.h>

#include "core/models/answerer.hpp"
#include "core/models/language_model.hpp"
#include "core/models/prefill_reuse.hpp"
#include "core/models/safetensors.hpp"
#include "core/models/tokenizer.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache {
namespace {

const std::string dir = std::string(VLCACHE_FIXTURES) + "/llama_tiny/";
const std::string ref_template = "USER: <image> {question} ASSISTANT:";

double rel_error(const float* a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, static_cast<double>(std::fabs(a[i] - b[i])));
    den = std::max(den, static_cast<double>(std::fabs(b[i])));
  }
  return den == 0 ? num : num / den;
}

const weight_set& ref() {
  static const weight_set w = *weight_set::open_file(dir + "reference.safetensors");
  return w;
}

std::vector<int> ref_ids(const std::string& name) {
  auto at = ref().find(name);
  EXPECT_NE(at.info, nullptr) << name;
  std::vector<int> out;
  for (std::int64_t i = 0; i < at.info->numel(); ++i) {
    std::int64_t v;
    std::memcpy(&v, at.file->data(*at.info) + 8 * i, 8);
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::vector<float> ref_floats(const std::string& name) {
  auto at = ref().find(name);
  return *ref().read_f32(name, at.info->shape);
}

nlohmann::json tokenizer_ref() {
  std::ifstream in(dir + "tokenizer_reference.json");
  return nlohmann::json::parse(in);
}

std::unique_ptr<language_model> load_lm(const std::string& folder) {
  auto lm = language_model::load(dir + folder, llm_options{});
  EXPECT_TRUE(lm) << (lm ? "" : lm.err().message);
  return lm ? std::move(*lm) : nullptr;
}

std::unique_ptr<tokenizer> load_tok() {
  auto t = tokenizer::load(dir + "tokenizer.model");
  EXPECT_TRUE(t) << (t ? "" : t.err().message);
  return t ? std::move(*t) : nullptr;
}

std::vector<int> greedy(language_model& lm, const tensor_handle& embeds, int steps) {
  kv_sequence seq;
  auto logits = lm.append(seq, embeds);
  EXPECT_TRUE(logits);
  sampling_options s;
  s.max_new_tokens = steps;
  auto g = lm.generate(seq, *logits, s);
  EXPECT_TRUE(g);
  return g->ids;
}

/// The reference greedy ids up to and including an EOS (HF's loop stops there).
std::vector<int> until_eos(std::vector<int> ids, int eos) {
  auto it = std::find(ids.begin(), ids.end(), eos);
  if (it != ids.end()) ids.erase(it + 1, ids.end());
  return ids;
}

TEST(tokenizer, matches_sentencepiece_encode) {
  auto tok = load_tok();
  for (const auto& e : tokenizer_ref()["encode"]) {
    auto ids = tok->encode(e["text"].get<std::string>());
    ASSERT_TRUE(ids);
    EXPECT_EQ(*ids, e["ids"].get<std::vector<int>>()) << e["text"];
  }
  EXPECT_EQ(tok->vocab_size(), 400);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
}

TEST(tokenizer, builds_the_llava_prompt) {
  auto tok = load_tok();
  const auto r = tokenizer_ref();
  auto p = tok->build_prompt(r["template"], r["question"], r["image_token_index"], r["image_tokens"]);
  ASSERT_TRUE(p) << p.err().message;
  EXPECT_EQ(p->ids, r["prompt_ids"].get<std::vector<int>>());
  EXPECT_EQ(p->image_count, 16);
  for (int i = 0; i < p->image_count; ++i) EXPECT_EQ(p->ids[p->image_begin + i], 400);
  EXPECT_NE(p->ids[p->image_begin - 1], 400);
  EXPECT_NE(p->ids[p->suffix_begin()], 400);
}

TEST(tokenizer, default_template_puts_a_newline_after_the_image) {
  auto tok = load_tok();
  auto p = tok->build_prompt(default_prompt_template, "What is in the frame?", 400, 4);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ids.front(), 1);  // BOS
  // The segment after <image> starts with the dummy-prefix piece and the
  // byte-fallback newline <0x0A> (id 3 + 10), as llava-hf's tokenizer gives.
  const int after = p->suffix_begin();
  const std::vector<int> head(p->ids.begin() + after, p->ids.begin() + after + 2);
  auto newline = tok->encode("\n");
  ASSERT_TRUE(newline);
  EXPECT_EQ(head, *newline);
  EXPECT_EQ(newline->back(), 13);
  EXPECT_EQ(tok->decode(*tok->encode("A red car near the corner.")), "A red car near the corner.");
}

TEST(tokenizer, errors_name_the_problem) {
  auto missing = tokenizer::load(dir + "nope/tokenizer.model");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("nope/tokenizer.model"), std::string::npos);
  auto tok = load_tok();
  EXPECT_FALSE(tok->build_prompt("USER: <image> ASSISTANT:", "q", 400, 4));           // no {question}
  EXPECT_FALSE(tok->build_prompt("USER: {question} ASSISTANT:", "q", 400, 4));        // no <image>
  EXPECT_FALSE(tok->build_prompt(default_prompt_template, "two <image> here", 400, 4));  // a second image
}

TEST(language_model, logits_match_the_reference) {
  auto lm = load_lm("standalone");
  ASSERT_TRUE(lm);
  EXPECT_FALSE(lm->random_weights());
  EXPECT_EQ(lm->config().num_kv_heads, 2);
  EXPECT_DOUBLE_EQ(lm->config().rope_theta, 20000.0);
  const auto ids = ref_ids("text_ids");
  auto e = lm->embed(ids);
  ASSERT_TRUE(e);
  kv_sequence seq;
  auto logits = lm->append(seq, *e, /*all_logits=*/true);
  ASSERT_TRUE(logits) << logits.err().message;
  EXPECT_LT(rel_error(logits->data(), ref_floats("text_logits")), 1e-4);
  EXPECT_EQ(seq.length(), static_cast<int>(ids.size()));
}

TEST(language_model, bf16_on_the_cpu_stays_close_to_the_reference) {
  llm_options o;
  o.dtype = "bf16";
  auto lm = language_model::load(dir + "standalone", o);
  ASSERT_TRUE(lm) << lm.err().message;
  kv_sequence seq;
  auto logits = (*lm)->append(seq, *(*lm)->embed(ref_ids("text_ids")), true);
  ASSERT_TRUE(logits);
  const double err = rel_error(logits->data(), ref_floats("text_logits"));
  EXPECT_GT(err, 1e-6);  // it did run in reduced precision
  EXPECT_LT(err, 0.1);  // bf16 keeps 8 bits of mantissa: ~6 % here, against 1e-4 in f32
  o.dtype = "f16";  // no half-precision kernels on the CPU: refused by name
  auto half = language_model::load(dir + "standalone", o);
  ASSERT_FALSE(half);
  EXPECT_NE(half.err().message.find("f16"), std::string::npos);
}

TEST(language_model, tied_head_uses_the_embedding) {
  auto lm = load_lm("standalone_tied");
  ASSERT_TRUE(lm);
  EXPECT_TRUE(lm->config().tie_word_embeddings);
  auto e = lm->embed(ref_ids("text_ids"));
  kv_sequence seq;
  auto logits = lm->append(seq, *e, true);
  ASSERT_TRUE(logits);
  EXPECT_LT(rel_error(logits->data(), ref_floats("tied_logits")), 1e-4);
}

TEST(language_model, greedy_with_kv_cache_matches_full_recompute) {
  auto lm = load_lm("standalone");
  auto e = lm->embed(ref_ids("text_ids"));
  EXPECT_EQ(greedy(*lm, *e, 8), until_eos(ref_ids("text_greedy"), 2));
}

TEST(language_model, token_by_token_equals_one_prefill) {
  auto lm = load_lm("standalone");
  const auto ids = ref_ids("text_ids");
  kv_sequence seq;
  tensor_handle last;
  for (int id : ids) last = *lm->append(seq, *lm->embed({id}));
  const auto all = ref_floats("text_logits");
  EXPECT_LT(rel_error(last.data(), std::vector<float>(all.end() - 416, all.end())), 1e-4);
}

TEST(language_model, sampling_is_seeded_and_top_p_zero_is_greedy) {
  auto lm = load_lm("standalone");
  auto e = lm->embed(ref_ids("text_ids"));
  kv_sequence s1, s2, s3;
  auto l1 = *lm->append(s1, *e);
  auto l2 = *lm->append(s2, *e);
  auto l3 = *lm->append(s3, *e);
  sampling_options hot;
  hot.temperature = 1.5;
  hot.seed = 7;
  hot.max_new_tokens = 12;
  auto a = *lm->generate(s1, l1, hot);
  auto b = *lm->generate(s2, l2, hot);
  EXPECT_EQ(a.ids, b.ids);
  sampling_options narrow = hot;
  narrow.top_p = 1e-9;  // only the most likely token survives
  narrow.max_new_tokens = 8;
  EXPECT_EQ(lm->generate(s3, l3, narrow)->ids, until_eos(ref_ids("text_greedy"), 2));
}

TEST(language_model, rejects_bad_positions_and_ids) {
  auto lm = load_lm("standalone");
  EXPECT_FALSE(lm->embed({5, 416}));
  kv_sequence seq;
  auto e = *lm->embed({1, 5, 6});
  auto gap = lm->forward(seq, e, {0, 1, 3});
  ASSERT_FALSE(gap);
  EXPECT_NE(gap.err().message.find("gap"), std::string::npos);
  EXPECT_EQ(seq.length(), 0);
  auto far = lm->forward(seq, e, {254, 255, 256});
  EXPECT_FALSE(far);
}

TEST(language_model, missing_or_misshapen_tensors_are_named) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("vlcache_lm_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  fs::copy_file(dir + "standalone_tied/model.safetensors", tmp / "model.safetensors",
                fs::copy_options::overwrite_existing);
  auto config = nlohmann::json::parse(std::ifstream(dir + "standalone_tied/config.json"));
  config["tie_word_embeddings"] = false;  // the head is then required, and absent
  std::ofstream(tmp / "config.json") << config.dump();
  auto no_head = language_model::load(tmp.string(), llm_options{});
  ASSERT_FALSE(no_head);
  EXPECT_NE(no_head.err().message.find("lm_head.weight"), std::string::npos) << no_head.err().message;
  config["tie_word_embeddings"] = true;
  config["vocab_size"] = 500;  // the embedding in the file has 416 rows
  std::ofstream(tmp / "config.json") << config.dump();
  auto wrong_vocab = language_model::load(tmp.string(), llm_options{});
  ASSERT_FALSE(wrong_vocab);
  EXPECT_NE(wrong_vocab.err().message.find("model.embed_tokens.weight"), std::string::npos);
  EXPECT_NE(wrong_vocab.err().message.find("[416, 48]"), std::string::npos) << wrong_vocab.err().message;
  fs::remove_all(tmp);
  // A LLaVA config whose text part does not describe a decoder.
  EXPECT_FALSE(language_model::load(std::string(VLCACHE_FIXTURES) + "/clip_tiny/llava_new", llm_options{}));
}

class llava_layouts : public ::testing::TestWithParam<const char*> {};

TEST_P(llava_layouts, image_prompt_matches_the_reference) {
  auto enc = vision_encoder::load(dir + GetParam(), encoder_options{});
  ASSERT_TRUE(enc) << enc.err().message;
  const auto px = ref_floats("pixel_values");
  auto full = (*enc)->encode_full({px.data()});
  ASSERT_TRUE(full);
  const auto& features = (*full)[0].features;
  EXPECT_LT(rel_error(features.data(), ref_floats("features")), 1e-5);

  answer_options o;
  o.prompt_template = ref_template;
  o.sampling.max_new_tokens = 8;
  auto a = answerer::load(dir + GetParam(), dir + "tokenizer.model", llm_options{}, o);
  ASSERT_TRUE(a) << a.err().message;
  const auto r = tokenizer_ref();
  auto prompt = (*a)->tokens().build_prompt(ref_template, r["question"], 400, 16);
  EXPECT_EQ(prompt->ids, ref_ids("mm_ids"));
  auto e = (*a)->model().embed(prompt->ids, &features);
  ASSERT_TRUE(e);
  kv_sequence seq;
  auto logits = (*a)->model().append(seq, *e, true);
  EXPECT_LT(rel_error(logits->data(), ref_floats("mm_logits")), 1e-4);
  auto ans = (*a)->ask(1, features, r["question"]);
  ASSERT_TRUE(ans) << ans.err().message;
  EXPECT_EQ(ans->ids, until_eos(ref_ids("mm_greedy"), 2));
  EXPECT_EQ(ans->prompt_tokens, 56);
  EXPECT_TRUE(ans->full_prefill);
  EXPECT_FALSE(ans->random_weights);
}

INSTANTIATE_TEST_SUITE_P(both, llava_layouts, ::testing::Values("llava_new", "llava_old"));

TEST(answerer, finds_the_snapshot_tokenizer_or_says_it_is_missing) {
  EXPECT_TRUE(answerer::load(dir + "llava_new", "", llm_options{}, answer_options{}));
  auto missing = answerer::load(dir + "llava_old", "", llm_options{}, answer_options{});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("tokenizer.model"), std::string::npos);
  auto preset = answerer::load("tiny", "", llm_options{}, answer_options{});
  ASSERT_FALSE(preset);
  EXPECT_NE(preset.err().message.find("tokenizer"), std::string::npos);
}

TEST(answerer, bad_requests_fail_alone) {
  auto a = *answerer::load(dir + "llava_new", "", llm_options{}, answer_options{});
  const auto feats = tensor_handle::from_floats(ref_floats("features").data(), {16, 48});
  auto narrow = tensor_handle::from_floats(ref_floats("features").data(), {16, 32});
  auto wrong_width = a->ask(1, narrow, "what?");
  ASSERT_FALSE(wrong_width);
  EXPECT_NE(wrong_width.err().message.find("[16, 32]"), std::string::npos) << wrong_width.err().message;
  auto long_question = a->ask(1, feats, std::string(2000, 'a'));
  ASSERT_FALSE(long_question);
  EXPECT_EQ(long_question.err().code, errc::capacity);
  EXPECT_TRUE(a->ask(1, feats, "what?"));  // the stream still answers

  // A tokenizer with more pieces than the model has rows.
  llm_options small;
  small.vocab_size = 100;
  auto lm = *language_model::load("tiny", small);
  auto mismatch = answerer::create(std::move(lm), load_tok(), answer_options{});
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.err().message.find("400 pieces"), std::string::npos);
}

// A question's own controls: streamed pieces make the same answer as the
// plain ask, a stop string cuts it, max_new_tokens bounds it, and a
// listener that goes away stops the decoding.
TEST(answerer, controls_stream_stop_and_bound_an_answer) {
  answer_options o;
  o.sampling.max_new_tokens = 8;
  auto plain = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  auto controlled = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  const auto feats = tensor_handle::from_floats(ref_floats("features").data(), {16, 48});
  auto reference = plain->ask(1, feats, "How many cars?");
  ASSERT_TRUE(reference) << reference.err().message;
  ASSERT_GE(reference->text.size(), 2u) << "the fixture's answer is too short to cut";

  std::string streamed;
  int calls = 0;
  ask_controls streaming;
  streaming.on_text = [&](const std::string& piece) {
    streamed += piece;
    ++calls;
    return true;
  };
  auto s = controlled->ask(1, feats, "How many cars?", streaming);
  ASSERT_TRUE(s) << s.err().message;
  EXPECT_EQ(s->ids, reference->ids);
  EXPECT_EQ(s->text, reference->text);
  EXPECT_EQ(streamed, reference->text);
  EXPECT_GE(calls, 1);

  ask_controls stopping;
  stopping.stop = {reference->text.substr(1, 1)};
  auto cut = controlled->ask(2, feats, "How many cars?", stopping);
  ASSERT_TRUE(cut);
  EXPECT_TRUE(cut->stopped_on_string);
  EXPECT_EQ(cut->text, reference->text.substr(0, reference->text.find(stopping.stop[0])));

  ask_controls short_one;
  short_one.sampling = o.sampling;
  short_one.sampling->max_new_tokens = 2;
  auto bounded = controlled->ask(3, feats, "How many cars?", short_one);
  ASSERT_TRUE(bounded);
  EXPECT_LE(bounded->ids.size(), 2u);
  EXPECT_EQ(bounded->ids, std::vector<int>(reference->ids.begin(), reference->ids.begin() + bounded->ids.size()));

  ask_controls leaving;
  leaving.on_text = [](const std::string&) { return false; };
  auto gone = controlled->ask(4, feats, "How many cars?", leaving);
  ASSERT_TRUE(gone);
  EXPECT_TRUE(gone->cancelled);
  EXPECT_LT(gone->ids.size(), reference->ids.size());
}

TEST(answerer, random_presets_say_so) {
  auto a = answerer::load("tiny", dir + "tokenizer.model", llm_options{}, answer_options{});
  ASSERT_TRUE(a) << a.err().message;
  EXPECT_TRUE((*a)->model().random_weights());
  EXPECT_NE((*a)->model().description().find("RANDOM"), std::string::npos);
  std::vector<float> f(16 * 48, 0.1f);
  auto ans = (*a)->ask(1, tensor_handle::from_floats(f.data(), {16, 48}), "what?");
  ASSERT_TRUE(ans) << ans.err().message;
  EXPECT_TRUE(ans->random_weights);
}

// KV reuse: with identical features only the suffix and the earliest image
// positions recompute, and the logits equal the full prefill's; with every
// image token changed the result is the full prefill's too.
struct reuse_fixture {
  std::unique_ptr<language_model> lm = *language_model::load(dir + "llava_new", llm_options{});
  std::unique_ptr<tokenizer> tok = load_tok();
  prompt_layout prompt = *tok->build_prompt(ref_template, "How many cars?", 400, 16);
  std::vector<float> base = ref_floats("features");

  tensor_handle full_logits(const std::vector<float>& f) {
    auto fh = tensor_handle::from_floats(f.data(), {16, 48});
    kv_sequence seq;
    return *lm->append(seq, *lm->embed(prompt.ids, &fh));
  }
  tensor_handle h(const std::vector<float>& f) { return tensor_handle::from_floats(f.data(), {16, 48}); }
  /// The features with every token moved well past the change tolerance.
  std::vector<float> all_moved() const {
    auto moved = base;
    for (auto& v : moved) v = v * 0.7f + 0.05f;
    return moved;
  }
};

// Batching several streams changes nothing but the speed.
TEST(batching, a_batched_forward_equals_separate_ones) {
  auto lm = load_lm("standalone");
  const auto ids = ref_ids("text_ids");
  const std::vector<int> other(ids.begin(), ids.begin() + 6);
  kv_sequence a1, b1, a2, b2;
  auto la = *lm->append(a1, *lm->embed(ids), true);
  auto lb = *lm->append(b1, *lm->embed(other), true);
  std::vector<int> pa(ids.size()), pb(other.size());
  std::iota(pa.begin(), pa.end(), 0);
  std::iota(pb.begin(), pb.end(), 0);
  auto both = lm->forward_batch({&a2, &b2}, {*lm->embed(ids), *lm->embed(other)}, {pa, pb}, true);
  ASSERT_TRUE(both) << both.err().message;
  EXPECT_LT(rel_error((*both)[0].data(), la.to_vector()), 1e-5);
  EXPECT_LT(rel_error((*both)[1].data(), lb.to_vector()), 1e-5);
  EXPECT_EQ(a2.length(), static_cast<int>(ids.size()));
  EXPECT_EQ(b2.length(), 6);
  EXPECT_FALSE(lm->forward_batch({&a2, &a2}, {*lm->embed({5}), *lm->embed({6})}, {{a2.length()}, {a2.length()}}));
}

TEST(batching, answers_in_a_batch_equal_answers_one_by_one) {
  answer_options o;
  o.sampling.max_new_tokens = 6;
  auto one = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  auto many = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  auto base = ref_floats("features");
  auto moved = base;
  for (auto& v : moved) v = v * 0.8f - 0.1f;
  const auto fa = tensor_handle::from_floats(base.data(), {16, 48});
  const auto fb = tensor_handle::from_floats(moved.data(), {16, 48});
  for (int round = 0; round < 2; ++round) {  // the second round reuses KV
    auto a = one->ask(1, fa, "How many cars?");
    auto b = one->ask(2, fb, "Is the door open?");
    auto batch = many->ask_batch({{1, fa, "How many cars?"}, {2, fb, "Is the door open?"}, {1, fb, "twice"}});
    ASSERT_TRUE(a && b && batch[0] && batch[1]);
    EXPECT_EQ(batch[0]->ids, a->ids);
    EXPECT_EQ(batch[1]->ids, b->ids);
    EXPECT_EQ(batch[0]->full_prefill, round == 0);
    EXPECT_EQ(batch[0]->batch, 2);
    ASSERT_FALSE(batch[2]);  // a stream at most once per batch
    EXPECT_NE(batch[2].err().message.find("twice"), std::string::npos);
  }
}

TEST(prefill_reuse, unchanged_image_recomputes_only_the_suffix) {
  reuse_fixture fx;
  reuse_options o;
  o.recompute_first = 2;
  prefill_cache cache(*fx.lm, o);
  auto first = cache.prefill(1, fx.prompt, fx.h(fx.base));
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->full);
  auto again = cache.prefill(1, fx.prompt, fx.h(fx.base));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->full);
  EXPECT_EQ(again->image_recomputed, 2);
  EXPECT_EQ(again->rows_computed, 2 + static_cast<int>(fx.prompt.ids.size()) - fx.prompt.suffix_begin());
  EXPECT_LT(rel_error(again->logits.data(), fx.full_logits(fx.base).to_vector()), 1e-5);
}

TEST(prefill_reuse, every_token_changed_equals_the_full_prefill) {
  reuse_fixture fx;
  prefill_cache cache(*fx.lm, reuse_options{});
  ASSERT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base)));
  const auto moved = fx.all_moved();
  auto r = cache.prefill(1, fx.prompt, fx.h(moved));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->full);
  EXPECT_EQ(r->image_recomputed, 16);
  EXPECT_LT(rel_error(r->logits.data(), fx.full_logits(moved).to_vector()), 1e-5);
  // Decoding after a reused prefill, then prefilling again, cuts the decoded tokens.
  sampling_options s;
  s.max_new_tokens = 5;
  ASSERT_TRUE(fx.lm->generate(*cache.sequence(1), r->logits, s));
  auto after = cache.prefill(1, fx.prompt, fx.h(moved));
  EXPECT_LT(rel_error(after->logits.data(), fx.full_logits(moved).to_vector()), 1e-5);
}

TEST(prefill_reuse, partial_change_recomputes_the_changed_tokens_and_stays_close) {
  reuse_fixture fx;
  reuse_options o;
  o.recompute_first = 0;
  prefill_cache cache(*fx.lm, o);
  ASSERT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base)));
  auto moved = fx.base;
  for (int i = 48 * 10; i < 48 * 12; ++i) moved[static_cast<std::size_t>(i)] += 0.3f;  // tokens 10 and 11
  auto r = cache.prefill(1, fx.prompt, fx.h(moved));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->image_recomputed, 2);
  const auto full = fx.full_logits(moved).to_vector();
  // Tokens 12..15 keep K/V computed with the old tokens 10, 11: close, not exact.
  const double err = rel_error(r->logits.data(), full);
  EXPECT_GT(err, 0.0);
  EXPECT_LT(err, 0.2);
}

// The default tolerance: slight moves of every token (what a layer-wise
// recomputing encoder makes of an unchanged patch) keep their K/V, and moves
// that add up against the features the K/V were computed with are caught.
TEST(prefill_reuse, slight_moves_keep_their_kv_until_they_add_up) {
  reuse_fixture fx;
  reuse_options o;
  o.recompute_first = 0;
  ASSERT_GT(o.change_tolerance, 0.0);
  prefill_cache cache(*fx.lm, o);
  ASSERT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base)));
  // Each token moved by a fixed share of the tolerance, along the token itself.
  const float step = static_cast<float>(o.change_tolerance) * 0.4f;
  auto moved = fx.base;
  int recomputed_at = -1;
  for (int round = 1; round <= 4 && recomputed_at < 0; ++round) {
    for (auto& v : moved) v += v * step;
    auto r = cache.prefill(1, fx.prompt, fx.h(moved));
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->full);
    if (r->image_recomputed > 0) {
      EXPECT_EQ(r->image_recomputed, 16);  // every token crossed the tolerance together
      recomputed_at = round;
    }
  }
  // 0.4, 0.808, 1.224 times the tolerance from the reference: the third move crosses it.
  EXPECT_EQ(recomputed_at, 3);
  // Right after, every token's reference is the new features: nothing is stale.
  auto again = cache.prefill(1, fx.prompt, fx.h(moved));
  EXPECT_EQ(again->image_recomputed, 0);
  EXPECT_LT(rel_error(again->logits.data(), fx.full_logits(moved).to_vector()), 1e-5);
}

TEST(prefill_reuse, a_new_prefix_or_size_runs_in_full) {
  reuse_fixture fx;
  reuse_options o;
  o.full_every = 3;
  prefill_cache cache(*fx.lm, o);
  ASSERT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base)));
  EXPECT_FALSE(cache.prefill(1, fx.prompt, fx.h(fx.base))->full);
  EXPECT_FALSE(cache.prefill(1, fx.prompt, fx.h(fx.base))->full);
  EXPECT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base))->full);  // every 3rd
  auto other = *fx.tok->build_prompt("SYSTEM: watch. USER: <image> {question} ASSISTANT:", "How many cars?", 400, 16);
  EXPECT_TRUE(cache.prefill(1, other, fx.h(fx.base))->full);
  // A different question keeps the image's KV: only the suffix changes.
  auto q2 = *fx.tok->build_prompt("SYSTEM: watch. USER: <image> {question} ASSISTANT:", "Is the door open?", 400, 16);
  auto r = cache.prefill(1, q2, fx.h(fx.base));
  EXPECT_FALSE(r->full);
  EXPECT_LT(rel_error(r->logits.data(),
                      [&] {
                        kv_sequence seq;
                        auto fh = fx.h(fx.base);
                        return fx.lm->append(seq, *fx.lm->embed(q2.ids, &fh))->to_vector();
                      }()),
            1e-5);
  // A stream's error (a wrong feature count) drops its state only.
  std::vector<float> few(8 * 48, 0.f);
  EXPECT_FALSE(cache.prefill(1, fx.prompt, tensor_handle::from_floats(few.data(), {8, 48})));
  EXPECT_EQ(cache.sequence(1), nullptr);
}

// Keeping the image K/V current between answers ([llm] keep_kv_current).
TEST(kv_update, after_an_update_the_answer_computes_only_its_suffix_and_equals_the_full_prefill) {
  reuse_fixture fx;
  reuse_options o;
  o.recompute_first = 0;
  prefill_cache cache(*fx.lm, o);
  ASSERT_TRUE(cache.prefill(1, fx.prompt, fx.h(fx.base)));
  const auto moved = fx.all_moved();
  const auto mh = fx.h(moved);
  auto u = cache.update_batch({{1, &fx.prompt, &mh}});
  ASSERT_TRUE(u[0]) << u[0].err().message;
  EXPECT_FALSE(u[0]->full);
  EXPECT_EQ(u[0]->image_recomputed, 16);
  EXPECT_EQ(u[0]->rows_computed, 16) << "the image rows only, not the question";
  EXPECT_EQ(u[0]->prompt_tokens, fx.prompt.suffix_begin());
  EXPECT_TRUE(u[0]->logits.empty());
  EXPECT_EQ(cache.sequence(1)->length(), fx.prompt.suffix_begin());
  auto r = cache.prefill(1, fx.prompt, mh);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->full);
  EXPECT_EQ(r->image_recomputed, 0);
  EXPECT_EQ(r->rows_computed, static_cast<int>(fx.prompt.ids.size()) - fx.prompt.suffix_begin());
  EXPECT_LT(rel_error(r->logits.data(), fx.full_logits(moved).to_vector()), 1e-5);
}

TEST(kv_update, a_new_stream_computes_prefix_and_image_and_an_unchanged_frame_nothing) {
  reuse_fixture fx;
  reuse_options o;  // the defaults: the answer also recomputes the earliest image positions
  o.recompute_last = 2;
  o.recompute_deviation = 3;
  ASSERT_GT(o.recompute_first, 0);
  prefill_cache cache(*fx.lm, o);
  const auto bh = fx.h(fx.base);
  auto first = cache.update_batch({{2, &fx.prompt, &bh}});
  ASSERT_TRUE(first[0]) << first[0].err().message;
  EXPECT_TRUE(first[0]->full);
  EXPECT_EQ(first[0]->rows_computed, fx.prompt.suffix_begin());
  auto again = cache.update_batch({{2, &fx.prompt, &bh}});
  ASSERT_TRUE(again[0]);
  EXPECT_FALSE(again[0]->full);
  EXPECT_EQ(again[0]->rows_computed, 0) << "an unchanged frame costs nothing";
  auto r = cache.prefill(2, fx.prompt, bh);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->image_recomputed, o.recompute_first + o.recompute_last);
  EXPECT_EQ(r->rows_computed, o.recompute_first + o.recompute_last + static_cast<int>(fx.prompt.ids.size()) -
                                  fx.prompt.suffix_begin());
  EXPECT_LT(rel_error(r->logits.data(), fx.full_logits(fx.base).to_vector()), 1e-5);
  // A stream's error (a wrong feature count) drops its state only.
  std::vector<float> few(8 * 48, 0.f);
  const auto fh = tensor_handle::from_floats(few.data(), {8, 48});
  auto bad = cache.update_batch({{2, &fx.prompt, &fh}});
  EXPECT_FALSE(bad[0]);
  EXPECT_EQ(cache.sequence(2), nullptr);
}

TEST(kv_update, the_answerer_updates_with_the_question_after_the_image_and_answers_the_same) {
  answer_options o;
  o.prompt_template = ref_template;
  o.sampling.max_new_tokens = 6;
  auto kept = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  auto plain = o;
  plain.reuse.enabled = false;
  auto fresh = *answerer::load(dir + "llava_new", "", llm_options{}, plain);
  auto base = ref_floats("features");
  auto moved = base;
  for (auto& v : moved) v = v * 0.8f - 0.1f;
  const auto fa = tensor_handle::from_floats(base.data(), {16, 48});
  const auto fb = tensor_handle::from_floats(moved.data(), {16, 48});
  ASSERT_TRUE(kept->ask(1, fa, "How many cars?"));
  auto u = kept->update_batch({{1, fb}});
  ASSERT_TRUE(u[0]) << u[0].err().message;
  EXPECT_EQ(u[0]->image_recomputed, 16);
  auto a = kept->ask(1, fb, "Is the door open?");
  auto b = fresh->ask(1, fb, "Is the door open?");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->image_recomputed, o.reuse.recompute_first) << "the update brought every other image row";
  EXPECT_EQ(a->ids, b->ids);
  // A frame without features is refused, naming its stream.
  auto none = kept->update_batch({{7, tensor_handle{}}});
  ASSERT_FALSE(none[0]);
  EXPECT_NE(none[0].err().message.find("stream 7"), std::string::npos) << none[0].err().message;
  // With the question before the image its K/V differ per question: refused, naming the template.
  o.prompt_template = "USER: {question} <image> ASSISTANT:";
  auto before = *answerer::load(dir + "llava_new", "", llm_options{}, o);
  auto refused = before->update_batch({{1, fa}});
  ASSERT_FALSE(refused[0]);
  EXPECT_NE(refused[0].err().message.find("'USER: {question} <image> ASSISTANT:' puts {question} before <image>"),
            std::string::npos)
      << refused[0].err().message;
  EXPECT_FALSE(answerer::updatable("USER: {question} ASSISTANT:"));
  EXPECT_TRUE(answerer::updatable(ref_template));
}

}  // namespace
}  // namespace vlcache
