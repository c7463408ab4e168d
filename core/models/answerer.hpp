#pragma once
/// \file
/// Answers a question about an image's visual tokens: the LLaVA prompt,
/// the prefill with KV reuse per stream, then decoding.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/models/answer.hpp"
#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/models/language_model.hpp"
#include "core/models/prefill_reuse.hpp"
#include "core/models/tokenizer.hpp"

namespace vlcache {

/// What one question may set for itself (OpenAI's max_tokens, temperature,
/// stop, stream): unset, the answerer's options hold.
struct ask_controls {
  std::optional<sampling_options> sampling;
  std::vector<std::string> stop;  ///< the answer ends where one begins
  /// Called with each piece of the answer once it is final; returning
  /// false stops the answer there (the listener went away).
  std::function<bool(const std::string& piece)> on_text;
};

struct answer_options {
  std::string prompt_template = default_prompt_template;
  sampling_options sampling;
  reuse_options reuse;
};

class answerer {
 public:
  /// Checks that tokenizer and model agree (vocabulary, image token).
  [[nodiscard]] static expected<std::unique_ptr<answerer>> create(std::unique_ptr<language_model> model,
                                                                  std::unique_ptr<tokenizer> tok,
                                                                  answer_options options);
  /// Loads a model folder or preset and its tokenizer: `tokenizer_path`, else
  /// the folder's tokenizer.model (presets need one given).
  [[nodiscard]] static expected<std::unique_ptr<answerer>> load(const std::string& model,
                                                                const std::string& tokenizer_path,
                                                                const llm_options& llm, answer_options options);
  ~answerer();

  /// One answer for `stream`; `features` [image_tokens, hidden] (may be empty
  /// for a text-only question). An error concerns this request only.
  [[nodiscard]] expected<answer> ask(stream_id stream, const tensor_handle& features, const std::string& question);
  /// ask() with the question's own sampling, stop strings and streaming.
  [[nodiscard]] expected<answer> ask(stream_id stream, const tensor_handle& features, const std::string& question,
                                     const ask_controls& controls);
  struct question_about {
    stream_id stream = 0;
    tensor_handle features;
    std::string question;
  };
  /// Several streams at once (each at most once): one prefill pass and
  /// decoding in step, so the weights are read once per step for all of them.
  [[nodiscard]] std::vector<expected<answer>> ask_batch(const std::vector<question_about>& batch);
  struct frame_of {
    stream_id stream = 0;
    tensor_handle features;  ///< [image_tokens, hidden]
  };
  /// Keeps each stream's image K/V current with a frame nobody asks about
  /// (prefill_cache::update_batch), so the next answer's prefill computes
  /// that frame's changes and its question only. Needs a template that puts
  /// {question} after <image> (else the image's K/V differ with every
  /// question): otherwise, or for a frame without features, an error.
  [[nodiscard]] std::vector<expected<prefill_result>> update_batch(const std::vector<frame_of>& batch);
  /// Whether the template lets update_batch keep K/V an answer can reuse.
  [[nodiscard]] static status updatable(const std::string& prompt_template);
  void end_stream(stream_id stream);
  [[nodiscard]] std::uint64_t kv_bytes(stream_id stream) const;

  [[nodiscard]] language_model& model() noexcept { return *model_; }
  [[nodiscard]] const tokenizer& tokens() const noexcept { return *tok_; }
  [[nodiscard]] const answer_options& options() const noexcept { return options_; }

 private:
  answerer(std::unique_ptr<language_model> model, std::unique_ptr<tokenizer> tok, answer_options options);
  /// The prompt for `question` about `features` (empty: a text-only prompt), or why there is none.
  [[nodiscard]] expected<prompt_layout> prompt_for(const tensor_handle& features, const std::string& question) const;
  /// ask_batch(), with `controls` for a batch of one.
  [[nodiscard]] std::vector<expected<answer>> answer_batch(const std::vector<question_about>& batch,
                                                          const ask_controls* controls);
  std::unique_ptr<language_model> model_;
  std::unique_ptr<tokenizer> tok_;
  answer_options options_;
  prefill_cache cache_;
};

}  // namespace vlcache
