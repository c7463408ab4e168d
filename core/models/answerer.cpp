#include "core/models/answerer.hpp"

#include <filesystem>

#include "core/base/answer_text_stream.hpp"

namespace vlcache {

answerer::answerer(std::unique_ptr<language_model> model, std::unique_ptr<tokenizer> tok, answer_options options)
    : model_(std::move(model)), tok_(std::move(tok)), options_(std::move(options)), cache_(*model_, options_.reuse) {}
answerer::~answerer() = default;

expected<std::unique_ptr<answerer>> answerer::create(std::unique_ptr<language_model> model,
                                                     std::unique_ptr<tokenizer> tok, answer_options options) {
  const auto& c = model->config();
  if (tok->vocab_size() > c.vocab_size)
    return error{errc::invalid_config, "tokenizer '" + tok->path() + "' has " + std::to_string(tok->vocab_size()) +
                                           " pieces but the model's vocabulary is " + std::to_string(c.vocab_size)};
  if (c.image_token_index >= 0 && c.image_token_index < tok->vocab_size())
    return error{errc::invalid_config, "image_token_index " + std::to_string(c.image_token_index) +
                                           " is a piece of tokenizer '" + tok->path() + "'"};
  if (options.prompt_template.find("{question}") == std::string::npos)
    return error{errc::invalid_config, "prompt template '" + options.prompt_template + "' has no {question}"};
  if (options.sampling.max_new_tokens <= 0) return error{errc::invalid_config, "max_new_tokens must be positive"};
  return std::unique_ptr<answerer>(new answerer(std::move(model), std::move(tok), std::move(options)));
}

expected<std::unique_ptr<answerer>> answerer::load(const std::string& model, const std::string& tokenizer_path,
                                                   const llm_options& llm, answer_options options) {
  namespace fs = std::filesystem;
  std::string path = tokenizer_path;
  if (path.empty()) {
    if (!fs::is_directory(model))
      return error{errc::not_found, "model '" + model + "' is a preset without a tokenizer: give a tokenizer.model"};
    path = (fs::path(model) / "tokenizer.model").string();
    if (!fs::exists(path))
      return error{errc::not_found, path + ": missing (the snapshot has no tokenizer.model; give one)"};
  }
  auto tok = tokenizer::load(path);
  if (!tok) return tok.err();
  llm_options o = llm;
  if (o.vocab_size == 0) o.vocab_size = (*tok)->vocab_size() + 1;  // the pieces, then the image token
  auto lm = language_model::load(model, o);
  if (!lm) return lm.err();
  return create(std::move(*lm), std::move(*tok), std::move(options));
}

expected<answer> answerer::ask(stream_id stream, const tensor_handle& features, const std::string& question) {
  auto out = ask_batch({question_about{stream, features, question}});
  return std::move(out[0]);
}

expected<answer> answerer::ask(stream_id stream, const tensor_handle& features, const std::string& question,
                               const ask_controls& controls) {
  if (controls.sampling && controls.sampling->max_new_tokens <= 0)
    return error{errc::invalid_argument, "max_new_tokens must be positive"};
  auto out = answer_batch({question_about{stream, features, question}}, &controls);
  return std::move(out[0]);
}

std::vector<expected<answer>> answerer::ask_batch(const std::vector<question_about>& batch) {
  return answer_batch(batch, nullptr);
}

expected<prompt_layout> answerer::prompt_for(const tensor_handle& features, const std::string& question) const {
  const auto& c = model_->config();
  const int image_tokens = features.empty() ? 0 : static_cast<int>(features.shape()[0]);
  if (image_tokens > 0 && c.image_token_index < 0)
    return error{errc::invalid_config, "the language model has no image_token_index (not a LLaVA config)"};
  return tok_->build_prompt(options_.prompt_template, question, c.image_token_index, image_tokens);
}

std::vector<expected<answer>> answerer::answer_batch(const std::vector<question_about>& batch,
                                                     const ask_controls* controls) {
  const auto& c = model_->config();
  const sampling_options& sampling = controls && controls->sampling ? *controls->sampling : options_.sampling;
  std::vector<expected<answer>> out;
  std::vector<prompt_layout> prompts;
  std::vector<std::size_t> index;  // prompts[i] answers batch[index[i]]
  prompts.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& q = batch[i];
    auto prompt = prompt_for(q.features, q.question);
    if (!prompt) {
      out.emplace_back(prompt.err());
      continue;
    }
    const int room = c.max_position_embeddings - static_cast<int>(prompt->ids.size());
    if (room < sampling.max_new_tokens) {
      out.emplace_back(error{errc::capacity, "the prompt has " + std::to_string(prompt->ids.size()) + " tokens; with " +
                                                 std::to_string(sampling.max_new_tokens) +
                                                 " new tokens it overflows the context of " +
                                                 std::to_string(c.max_position_embeddings)});
      continue;
    }
    out.emplace_back(answer{});
    index.push_back(i);
    prompts.push_back(std::move(*prompt));
  }
  std::vector<prefill_cache::request> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    requests.push_back({batch[index[i]].stream, &prompts[i], &batch[index[i]].features});
  auto pre = cache_.prefill_batch(requests);
  std::vector<kv_sequence*> seqs;
  std::vector<tensor_handle> logits;
  std::vector<std::size_t> live;  // positions in `prompts` that prefilled
  for (std::size_t i = 0; i < pre.size(); ++i) {
    if (!pre[i]) {
      out[index[i]] = pre[i].err();
      continue;
    }
    seqs.push_back(cache_.sequence(batch[index[i]].stream));
    logits.push_back(pre[i]->logits);
    live.push_back(i);
  }
  if (live.empty()) return out;
  // A streamed or stopped answer (a batch of one) is decoded as it grows.
  answer_text_stream text(controls ? controls->stop : std::vector<std::string>{});
  std::vector<int> so_far;
  bool cancelled = false;
  language_model::token_hook hook;
  if (controls && (controls->on_text || !controls->stop.empty()))
    hook = [&](std::size_t, int id) {
      so_far.push_back(id);
      const std::string piece = text.update(tok_->decode(so_far));
      if (!piece.empty() && controls->on_text && !controls->on_text(piece)) cancelled = true;
      return !text.stopped() && !cancelled;
    };
  auto gen = model_->generate_batch(seqs, logits, sampling, hook);
  for (std::size_t j = 0; j < live.size(); ++j) {
    const std::size_t i = live[j];
    const auto& q = batch[index[i]];
    if (!gen) {
      cache_.end_stream(q.stream);
      out[index[i]] = gen.err();
      continue;
    }
    const auto& g = (*gen)[j];
    const auto& p = *pre[i];
    answer a;
    a.question = q.question;
    a.ids = g.ids;
    std::vector<int> text_ids = g.ids;
    if (g.stopped_on_eos) text_ids.pop_back();
    a.text = tok_->decode(text_ids);
    if (hook) {
      // The streamed text is the answer (cut at a stop string); what it held back goes out now.
      a.text = text.text();
      const std::string rest = text.finish();
      if (!rest.empty() && controls->on_text && !cancelled) (void)controls->on_text(rest);
      a.stopped_on_string = text.stopped();
      a.cancelled = cancelled;
    }
    a.stopped_on_eos = g.stopped_on_eos;
    a.random_weights = model_->random_weights();
    a.prompt_tokens = p.prompt_tokens;
    a.image_tokens = p.image_tokens;
    a.image_recomputed = p.image_recomputed;
    a.rows_computed = p.rows_computed;
    a.full_prefill = p.full;
    a.prefill_ms = p.ms;
    a.decode_ms = g.decode_ms;
    a.batch = static_cast<int>(live.size());
    out[index[i]] = std::move(a);
  }
  return out;
}

status answerer::updatable(const std::string& prompt_template) {
  const auto image = prompt_template.find("<image>"), question = prompt_template.find("{question}");
  if (image == std::string::npos)
    return error{errc::invalid_config, "prompt template '" + prompt_template + "' has no <image>: no image K/V to keep"};
  if (question == std::string::npos || question < image)
    return error{errc::invalid_config, "prompt template '" + prompt_template +
                                           "' puts {question} before <image>: the image's K/V would differ with every "
                                           "question, so none can be kept current between answers"};
  return {};
}

std::vector<expected<prefill_result>> answerer::update_batch(const std::vector<frame_of>& batch) {
  std::vector<expected<prefill_result>> out;
  if (auto st = updatable(options_.prompt_template); !st) {
    for (std::size_t i = 0; i < batch.size(); ++i) out.emplace_back(st.err());
    return out;
  }
  std::vector<prompt_layout> prompts;
  std::vector<std::size_t> index;  // prompts[i] updates batch[index[i]]
  prompts.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& f = batch[i];
    if (f.features.empty()) {
      out.emplace_back(error{errc::invalid_argument, "K/V update of stream " + std::to_string(f.stream) +
                                                         ": a frame without features"});
      continue;
    }
    // The question comes after the image, so the prefix and the image
    // positions are the same whatever is asked: an empty one stands in.
    auto prompt = prompt_for(f.features, "");
    if (!prompt) {
      out.emplace_back(error{prompt.err().code, "K/V update of stream " + std::to_string(f.stream) + ": " +
                                                    prompt.err().message});
      continue;
    }
    out.emplace_back(prefill_result{});
    index.push_back(i);
    prompts.push_back(std::move(*prompt));
  }
  std::vector<prefill_cache::request> requests;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    requests.push_back({batch[index[i]].stream, &prompts[i], &batch[index[i]].features});
  auto done = cache_.update_batch(requests);
  for (std::size_t i = 0; i < done.size(); ++i) out[index[i]] = std::move(done[i]);
  return out;
}

void answerer::end_stream(stream_id stream) { cache_.end_stream(stream); }
std::uint64_t answerer::kv_bytes(stream_id stream) const { return cache_.bytes(stream); }

}  // namespace vlcache
