#include "core/answerer.hpp"

#include <filesystem>

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
  const auto& c = model_->config();
  const int image_tokens = features.empty() ? 0 : static_cast<int>(features.shape()[0]);
  if (image_tokens > 0 && c.image_token_index < 0)
    return error{errc::invalid_config, "the language model has no image_token_index (not a LLaVA config)"};
  auto prompt = tok_->build_prompt(options_.prompt_template, question, c.image_token_index, image_tokens);
  if (!prompt) return prompt.err();
  const int room = c.max_position_embeddings - static_cast<int>(prompt->ids.size());
  if (room < options_.sampling.max_new_tokens)
    return error{errc::capacity, "the prompt has " + std::to_string(prompt->ids.size()) + " tokens; with " +
                                     std::to_string(options_.sampling.max_new_tokens) +
                                     " new tokens it overflows the context of " +
                                     std::to_string(c.max_position_embeddings)};
  auto pre = cache_.prefill(stream, *prompt, features);
  if (!pre) return pre.err();
  auto gen = model_->generate(*cache_.sequence(stream), pre->logits, options_.sampling);
  if (!gen) {
    cache_.end_stream(stream);
    return gen.err();
  }
  answer a;
  a.question = question;
  a.ids = gen->ids;
  std::vector<int> text_ids = gen->ids;
  if (gen->stopped_on_eos) text_ids.pop_back();
  a.text = tok_->decode(text_ids);
  a.stopped_on_eos = gen->stopped_on_eos;
  a.random_weights = model_->random_weights();
  a.prompt_tokens = pre->prompt_tokens;
  a.image_tokens = pre->image_tokens;
  a.image_recomputed = pre->image_recomputed;
  a.rows_computed = pre->rows_computed;
  a.full_prefill = pre->full;
  a.prefill_ms = pre->ms;
  a.decode_ms = gen->decode_ms;
  return a;
}

void answerer::end_stream(stream_id stream) { cache_.end_stream(stream); }
std::uint64_t answerer::kv_bytes(stream_id stream) const { return cache_.bytes(stream); }

}  // namespace vlcache
