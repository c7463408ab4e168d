#include "core/models/llama_config.hpp"
#include "core/models/clip_config.hpp"

#include <nlohmann/json.hpp>

namespace vlcache {

status llama_config::validate() const {
  auto bad = [](const std::string& what) { return error{errc::invalid_config, what}; };
  if (vocab_size <= 0) return bad("vocab_size must be positive");
  if (hidden_size <= 0 || num_heads <= 0 || hidden_size % num_heads != 0)
    return bad("hidden_size " + std::to_string(hidden_size) + " is not divisible by num_attention_heads " +
               std::to_string(num_heads));
  if (head_dim() % 2 != 0) return bad("head dimension " + std::to_string(head_dim()) + " is odd (rotary needs pairs)");
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0)
    return bad("num_attention_heads " + std::to_string(num_heads) + " is not a multiple of num_key_value_heads " +
               std::to_string(num_kv_heads));
  if (num_layers <= 0 || intermediate_size <= 0) return bad("num_hidden_layers and intermediate_size must be positive");
  if (hidden_act != "silu") return bad("hidden_act '" + hidden_act + "' (silu)");
  if (rms_norm_eps <= 0 || rope_theta <= 0) return bad("rms_norm_eps and rope_theta must be positive");
  if (max_position_embeddings <= 0) return bad("max_position_embeddings must be positive");
  if (image_token_index >= vocab_size)
    return bad("image_token_index " + std::to_string(image_token_index) + " is outside the vocabulary of " +
               std::to_string(vocab_size));
  return {};
}

expected<llama_config> parse_llama_config(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return error{errc::invalid_config, origin + ": not valid JSON: " + e.what()};
  }
  if (!j.is_object()) return error{errc::invalid_config, origin + ": not a JSON object"};
  const bool llava = j.contains("text_config");
  const nlohmann::json& t = llava ? j["text_config"] : j;
  if (!t.is_object()) return error{errc::invalid_config, origin + ": text_config is not an object"};
  llama_config c;
  try {
    const std::string type = t.value("model_type", "llama");
    if (type != "llama" && type != "mistral")
      return error{errc::invalid_config, origin + ": model_type '" + type + "' is not a LLaMA-family decoder"};
    c.vocab_size = t.value("vocab_size", c.vocab_size);
    c.hidden_size = t.value("hidden_size", c.hidden_size);
    c.intermediate_size = t.value("intermediate_size", c.intermediate_size);
    c.num_layers = t.value("num_hidden_layers", c.num_layers);
    c.num_heads = t.value("num_attention_heads", c.num_heads);
    c.num_kv_heads = t.contains("num_key_value_heads") && !t["num_key_value_heads"].is_null()
                         ? t["num_key_value_heads"].get<int>()
                         : c.num_heads;
    c.rms_norm_eps = t.value("rms_norm_eps", c.rms_norm_eps);
    c.rope_theta = t.value("rope_theta", c.rope_theta);
    if (t.contains("rope_scaling") && !t["rope_scaling"].is_null())
      return error{errc::invalid_config, origin + ": rope_scaling is not supported"};
    c.max_position_embeddings = t.value("max_position_embeddings", c.max_position_embeddings);
    c.tie_word_embeddings = t.value("tie_word_embeddings", j.value("tie_word_embeddings", false));
    c.hidden_act = t.value("hidden_act", c.hidden_act);
    if (t.contains("bos_token_id") && t["bos_token_id"].is_number()) c.bos_token_id = t["bos_token_id"];
    if (t.contains("eos_token_id") && t["eos_token_id"].is_number()) c.eos_token_id = t["eos_token_id"];
    if (llava) c.image_token_index = j.value("image_token_index", j.value("image_token_id", 32000));
  } catch (const nlohmann::json::exception& e) {
    return error{errc::invalid_config, origin + ": a field has the wrong type: " + e.what()};
  }
  if (auto st = c.validate(); !st) return error{errc::invalid_config, origin + ": " + st.err().message};
  return c;
}

expected<llama_config> llama_preset_config(const std::string& name, int vocab_size) {
  llama_config c;
  if (name == "tiny") {
    c.hidden_size = 48;
    c.intermediate_size = 112;
    c.num_layers = 3;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.max_position_embeddings = 1024;
  } else if (name == "vit-b16") {
    c.hidden_size = 768;
    c.intermediate_size = 2048;
    c.num_layers = 12;
    c.num_heads = 12;
    c.num_kv_heads = 4;
    c.max_position_embeddings = 2048;
  } else if (name == "clip-vit-l14-336") {
    // Defaults above are Vicuna-7B's (LLaVA-1.5-7B's language model).
  } else {
    return error{errc::not_found, "unknown language-model preset '" + name +
                                      "' (" + std::string(preset_names) + ", or a model folder)"};
  }
  if (vocab_size <= 1) return error{errc::invalid_argument, "preset '" + name + "' needs the tokenizer's vocabulary size"};
  c.vocab_size = vocab_size;
  c.image_token_index = vocab_size - 1;
  if (auto st = c.validate(); !st) return st.err();
  return c;
}

}  // namespace vlcache
