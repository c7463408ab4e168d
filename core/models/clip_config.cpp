#include "core/models/clip_config.hpp"

#include <nlohmann/json.hpp>

namespace vlcache {

const char* to_string(key_layout k) noexcept {
  switch (k) {
    case key_layout::clip: return "vision_model.*";
    case key_layout::llava: return "vision_tower.vision_model.*";
    case key_layout::llava_model: return "model.vision_tower.vision_model.*";
  }
  return "?";
}

status clip_vision_config::validate() const {
  auto bad = [](const std::string& what) { return error{errc::invalid_config, what}; };
  if (hidden_size <= 0 || num_heads <= 0 || hidden_size % num_heads != 0)
    return bad("hidden_size " + std::to_string(hidden_size) + " is not divisible by num_attention_heads " +
               std::to_string(num_heads));
  if (num_layers <= 0 || intermediate_size <= 0) return bad("num_hidden_layers and intermediate_size must be positive");
  if (patch_size <= 0 || image_size % patch_size != 0)
    return bad("image_size " + std::to_string(image_size) + " is not a multiple of patch_size " +
               std::to_string(patch_size));
  if (num_channels != 3) return bad("num_channels " + std::to_string(num_channels) + " (only 3 is supported)");
  if (hidden_act != "quick_gelu" && hidden_act != "gelu")
    return bad("hidden_act '" + hidden_act + "' (quick_gelu or gelu)");
  if (projector_act != "gelu") return bad("projector_hidden_act '" + projector_act + "' (gelu)");
  if (feature_layer < -(num_layers + 1) || feature_layer > num_layers || layers_used() < 1)
    return bad("vision_feature_layer " + std::to_string(feature_layer) + " selects no layer output of " +
               std::to_string(num_layers) + " layers");
  if (projector_dim && *projector_dim <= 0) return bad("text_config.hidden_size must be positive");
  return {};
}

expected<clip_vision_config> parse_clip_config(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return error{errc::invalid_config, origin + ": not valid JSON: " + e.what()};
  }
  if (!j.is_object()) return error{errc::invalid_config, origin + ": not a JSON object"};
  clip_vision_config c;
  const bool llava = j.value("model_type", "") == "llava" || j.contains("text_config") ||
                     j.contains("mm_projector_type") || j.contains("projector_hidden_act");
  // CLIPModel and LLaVA nest the tower's config; CLIPVisionModel does not.
  const nlohmann::json& v = j.contains("vision_config") && j["vision_config"].is_object() ? j["vision_config"] : j;
  try {
    c.hidden_size = v.value("hidden_size", c.hidden_size);
    c.intermediate_size = v.value("intermediate_size", c.intermediate_size);
    c.num_layers = v.value("num_hidden_layers", c.num_layers);
    c.num_heads = v.value("num_attention_heads", c.num_heads);
    c.image_size = v.value("image_size", c.image_size);
    c.patch_size = v.value("patch_size", c.patch_size);
    c.num_channels = v.value("num_channels", c.num_channels);
    c.layer_norm_eps = v.value("layer_norm_eps", c.layer_norm_eps);
    c.hidden_act = v.value("hidden_act", c.hidden_act);
    if (llava) {
      c.feature_layer = j.value("vision_feature_layer", -2);
      const std::string strategy = j.value("vision_feature_select_strategy", "default");
      if (strategy != "default" && strategy != "full")
        return error{errc::invalid_config, origin + ": vision_feature_select_strategy '" + strategy + "'"};
      c.keep_class_token = strategy == "full";
      const auto& t = j.contains("text_config") ? j["text_config"] : nlohmann::json::object();
      c.projector_dim = t.value("hidden_size", 4096);
      c.projector_act = j.value("projector_hidden_act", "gelu");
    }
  } catch (const nlohmann::json::exception& e) {
    return error{errc::invalid_config, origin + ": a field has the wrong type: " + e.what()};
  }
  if (auto st = c.validate(); !st) return error{errc::invalid_config, origin + ": " + st.err().message};
  return c;
}

bool is_preset_name(const std::string& name) {
  return name == "tiny" || name == "vit-b16" || name == "clip-vit-l14-336";
}

expected<clip_vision_config> preset_config(const std::string& name) {
  clip_vision_config c;
  if (name == "tiny") {
    c.hidden_size = 32;
    c.intermediate_size = 64;
    c.num_layers = 3;
    c.num_heads = 4;
    c.image_size = 32;
    c.patch_size = 8;
    c.projector_dim = 48;
  } else if (name == "vit-b16") {
    // ViT-B/16 at 224: the whole 12-layer forward is the measured baseline.
    c.hidden_size = 768;
    c.intermediate_size = 3072;
    c.num_layers = 12;
    c.num_heads = 12;
    c.image_size = 224;
    c.patch_size = 16;
    c.feature_layer = -1;
  } else if (name == "clip-vit-l14-336") {
    // LLaVA-1.5's tower and projector into a 4096-wide LLaMA.
    c.hidden_size = 1024;
    c.intermediate_size = 4096;
    c.num_layers = 24;
    c.num_heads = 16;
    c.image_size = 336;
    c.patch_size = 14;
    c.projector_dim = 4096;
  } else {
    return error{errc::not_found, "unknown model preset '" + name +
                                      "' (" + std::string(preset_names) + ", or a model folder)"};
  }
  return c;
}

}  // namespace vlcache
