#pragma once
/// \file
/// The shape of a CLIP vision tower and, for LLaVA checkpoints, of the
/// multimodal projector and the feature selection, read from a Hugging Face
/// config.json (CLIPVisionModel, CLIPModel or LlavaForConditionalGeneration)
/// or taken from a built-in preset.

#include <optional>
#include <string>

#include "core/base/error.hpp"

namespace vlcache {

/// Where the vision tower's tensors live in a checkpoint.
enum class key_layout {
  clip,        ///< vision_model.*                     (CLIPVisionModel, CLIPModel)
  llava,       ///< vision_tower.vision_model.*, multi_modal_projector.*
  llava_model, ///< model.vision_tower.vision_model.*, model.multi_modal_projector.*
};

[[nodiscard]] const char* to_string(key_layout k) noexcept;

struct clip_vision_config {
  int hidden_size = 768;
  int intermediate_size = 3072;
  int num_layers = 12;
  int num_heads = 12;
  int image_size = 224;
  int patch_size = 32;
  int num_channels = 3;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "quick_gelu";
  /// Index into the hidden states (0 = embeddings after pre_layrnorm, i =
  /// output of layer i); negative counts from the end, so -2 is the
  /// penultimate layer's output (LLaVA's default). No post layer norm.
  int feature_layer = -2;
  bool keep_class_token = false;  ///< LLaVA's "full" strategy; "default" drops it
  std::optional<int> projector_dim;  ///< LLaVA projector output (text hidden size)
  std::string projector_act = "gelu";

  [[nodiscard]] int grid_side() const noexcept { return image_size / patch_size; }
  [[nodiscard]] int num_patches() const noexcept { return grid_side() * grid_side(); }
  [[nodiscard]] int num_tokens() const noexcept { return num_patches() + 1; }
  [[nodiscard]] int head_dim() const noexcept { return hidden_size / num_heads; }
  /// Layers that must run to reach the selected hidden state.
  [[nodiscard]] int layers_used() const noexcept {
    return feature_layer < 0 ? num_layers + 1 + feature_layer : feature_layer;
  }
  [[nodiscard]] int output_dim() const noexcept { return projector_dim.value_or(hidden_size); }
  [[nodiscard]] int output_tokens() const noexcept {
    return keep_class_token ? num_tokens() : num_patches();
  }
  [[nodiscard]] status validate() const;
};

/// Parses config.json text; `origin` names the file in errors.
[[nodiscard]] expected<clip_vision_config> parse_clip_config(const std::string& json_text,
                                                             const std::string& origin);

/// Built-in random-weight shapes (vision and language model alike), as
/// messages and help texts list them.
inline constexpr const char* preset_names = "tiny, vit-b16, clip-vit-l14-336";
[[nodiscard]] expected<clip_vision_config> preset_config(const std::string& name);
[[nodiscard]] bool is_preset_name(const std::string& name);

}  // namespace vlcache
