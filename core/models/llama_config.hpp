#pragma once
/// \file
/// The shape of a LLaMA-family decoder (LlamaForCausalLM and LLaVA's
/// language model), read from a Hugging Face config.json (standalone, or a
/// LLaVA config's text_config) or taken from a built-in preset.

#include <string>

#include "core/base/error.hpp"

namespace vlcache {

struct llama_config {
  int vocab_size = 32000;
  int hidden_size = 4096;
  int intermediate_size = 11008;
  int num_layers = 32;
  int num_heads = 32;
  int num_kv_heads = 32;  ///< grouped-query attention when below num_heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  std::string hidden_act = "silu";
  int bos_token_id = 1;
  int eos_token_id = 2;
  /// LLaVA: the id that marks image positions in the prompt; -1 without one.
  int image_token_index = -1;

  [[nodiscard]] int head_dim() const noexcept { return hidden_size / num_heads; }
  [[nodiscard]] status validate() const;
};

/// Parses config.json text; `origin` names the file in errors. A LLaVA
/// config contributes its text_config and image_token_index.
[[nodiscard]] expected<llama_config> parse_llama_config(const std::string& json_text, const std::string& origin);

/// Built-in random-weight shapes, named after the vision presets they pair
/// with (the decoder's width is the encoder's output width):
/// "tiny" (48 wide), "vit-b16" (a 12-layer 768-wide LLaMA with GQA),
/// "clip-vit-l14-336" (LLaVA-1.5-7B's Vicuna-7B shape). `vocab_size` comes
/// from the tokenizer in use (its pieces plus the image token).
[[nodiscard]] expected<llama_config> llama_preset_config(const std::string& name, int vocab_size);

}  // namespace vlcache
