#pragma once
/// \file
/// A sentencepiece tokenizer (a snapshot's tokenizer.model) plus the
/// prompt handling of Hugging Face's legacy LlamaTokenizer for LLaVA:
/// BOS first, the text between `<image>` markers encoded segment by segment
/// (each with sentencepiece's dummy prefix), the image token in between,
/// repeated once per visual token.

#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache {

/// Where the parts of a LLaVA prompt lie: [prefix][image][suffix].
struct prompt_layout {
  std::vector<int> ids;
  int image_begin = 0;  ///< first image position (= prefix length)
  int image_count = 0;  ///< image positions (0 when the prompt has none)
  [[nodiscard]] int suffix_begin() const noexcept { return image_begin + image_count; }
};

class tokenizer {
 public:
  /// Loads a sentencepiece model file; errors name the file.
  [[nodiscard]] static expected<std::unique_ptr<tokenizer>> load(const std::string& path);
  ~tokenizer();

  [[nodiscard]] int vocab_size() const noexcept;  ///< sentencepiece pieces
  [[nodiscard]] int bos_id() const noexcept;
  [[nodiscard]] int eos_id() const noexcept;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// Plain sentencepiece encoding of one text (no BOS).
  [[nodiscard]] expected<std::vector<int>> encode(const std::string& text) const;
  /// Text of generated ids; ids beyond the pieces (image token, padding) print nothing.
  [[nodiscard]] std::string decode(const std::vector<int>& ids) const;

  /// The prompt for `question` in `prompt_template` (which holds `{question}`
  /// and at most one `<image>`), with the image token `image_token` repeated
  /// `image_tokens` times.
  [[nodiscard]] expected<prompt_layout> build_prompt(const std::string& prompt_template, const std::string& question,
                                                     int image_token, int image_tokens) const;

 private:
  struct impl;
  explicit tokenizer(std::unique_ptr<impl> p, std::string path);
  std::unique_ptr<impl> impl_;
  std::string path_;
};

/// LLaVA-1.5's conversation template.
inline constexpr const char* default_prompt_template = "USER: <image>\n{question} ASSISTANT:";

}  // namespace vlcache
