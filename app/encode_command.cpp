#include "app/encode_command.hpp"
#include "core/base/elapsed.hpp"
#include "app/load_encoder.hpp"

#include <chrono>
#include <cstdio>

#include "connectors/image_file.hpp"
#include "core/base/preprocess.hpp"
#include "core/models/safetensors.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache::app {

void add_encode_command(CLI::App& app, encode_options& o) {
  auto* c = app.add_subcommand("encode", "Encode one image; write features (and hidden states) as safetensors");
  c->add_option("--model", o.model, std::string("Hugging Face snapshot folder or preset (") + preset_names + ")")->default_val("tiny");
  c->add_option("--image", o.image, "Image file")->required();
  c->add_option("--out", o.out, "Output .safetensors file")->required();
  c->add_flag("--hidden-states", o.hidden_states, "Also write every hidden state up to the selected layer");
  c->add_flag("--pad-to-square", o.pad_to_square, "LLaVA's pad-to-square preprocessing");
  c->add_option("--device", o.device, "cpu or cuda[:N]")->default_val("cpu");
  c->add_option("--dtype", o.dtype, "f32 (cpu); f32, f16 or bf16 (cuda)")->default_val("f32");
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
}

int run_encode(const encode_options& o) {
  auto enc = load_encoder_or_report(o.model, o.device, o.dtype, o.threads);
  if (!enc) return 2;
  auto img = connectors::read_image(o.image);
  if (!img) {
    std::fprintf(stderr, "error: %s\n", img.err().message.c_str());
    return 2;
  }
  const auto& cfg = enc->config();
  auto pre = preprocess(img->view(), preprocess_config::clip(cfg.image_size, o.pad_to_square));
  if (!pre) {
    std::fprintf(stderr, "error: %s: %s\n", o.image.c_str(), pre.err().message.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto out = enc->encode_full({pre->pixels.data()}, o.hidden_states);
  const double ms = ms_since(t0);
  if (!out) {
    std::fprintf(stderr, "error: %s\n", out.err().message.c_str());
    return 1;
  }
  const auto& r = (*out)[0];
  std::vector<std::pair<std::string, std::pair<std::vector<std::int64_t>, const float*>>> tensors;
  tensors.push_back({"features", {r.features.shape(), r.features.data()}});
  const std::int64_t s = cfg.image_size;
  tensors.push_back({"pixel_values", {{1, 3, s, s}, pre->pixels.data()}});
  for (std::size_t i = 0; i < r.hidden_states.size(); ++i)
    tensors.push_back({"hidden_states." + std::to_string(i), {r.hidden_states[i].shape(), r.hidden_states[i].data()}});
  auto st = write_safetensors(o.out, tensors,
                              {{"model", o.model},
                               {"random_weights", enc->random_weights() ? "true" : "false"},
                               {"feature_layer", std::to_string(cfg.feature_layer)}});
  if (!st) {
    std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
    return 1;
  }
  const auto shape = r.features.shape();
  std::printf("%s: features [%lld, %lld] in %.1f ms (%s) -> %s\n", o.image.c_str(),
              static_cast<long long>(shape[0]), static_cast<long long>(shape[1]), ms,
              enc->description().c_str(), o.out.c_str());
  return 0;
}

}  // namespace vlcache::app
