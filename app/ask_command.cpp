#include "app/ask_command.hpp"
#include "core/models/clip_config.hpp"
#include "core/base/elapsed.hpp"
#include "app/load_encoder.hpp"

#include <chrono>
#include <cstdio>

#include "connectors/answer_json.hpp"
#include "connectors/image_file.hpp"
#include "core/base/preprocess.hpp"
#include "graph/model_input.hpp"

namespace vlcache::app {

void add_ask_command(CLI::App& app, ask_options& o) {
  auto* c = app.add_subcommand("ask", "Answer one question about one image");
  c->add_option("--model", o.model,
                 std::string("Hugging Face LLaVA snapshot folder or preset (") + preset_names +
                     "); default: the shipped scene model, which answers questions about coloured shapes")
      ->default_val(graph::shipped_model());
  c->add_option("--tokenizer", o.tokenizer, "sentencepiece model (default: the snapshot's tokenizer.model)");
  c->add_option("--image", o.image, "Image file")->required();
  c->add_option("--question", o.question, "The question")->required();
  c->add_option("--template", o.prompt_template, "Prompt template with <image> and {question}")
      ->default_val(default_prompt_template);
  c->add_option("--max-new-tokens", o.max_new_tokens, "Most tokens to generate")->default_val(32)->check(CLI::PositiveNumber);
  c->add_option("--temperature", o.temperature, "0: greedy")->default_val(0.0);
  c->add_option("--top-p", o.top_p, "Nucleus sampling mass")->default_val(1.0);
  c->add_option("--seed", o.seed, "Sampling seed")->default_val(0);
  c->add_flag("--pad-to-square", o.pad_to_square, "LLaVA's pad-to-square preprocessing");
  c->add_flag("--json", o.json, "Print the answer as one JSON object");
  c->add_option("--device", o.device, "cpu or cuda[:N]")->default_val("cpu");
  c->add_option("--dtype", o.dtype, "f32 (cpu); f32, f16 or bf16 (cuda)")->default_val("f32");
  c->add_option("--llm-dtype", o.llm_dtype, "The language model's dtype (default: --dtype); bf16 works on the CPU");
  c->add_option("--threads", o.threads, "Intra-op threads (0: all cores)")->default_val(0);
}

int run_ask(const ask_options& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto enc = load_encoder_or_report(o.model, o.device, o.dtype, o.threads);
  if (!enc) return 2;
  llm_options lo;
  lo.device = o.device;
  lo.dtype = o.llm_dtype.empty() ? o.dtype : o.llm_dtype;
  lo.threads = o.threads;
  answer_options ao;
  ao.prompt_template = o.prompt_template;
  ao.sampling.max_new_tokens = o.max_new_tokens;
  ao.sampling.temperature = o.temperature;
  ao.sampling.top_p = o.top_p;
  ao.sampling.seed = o.seed;
  auto llm = answerer::load(o.model, o.tokenizer, lo, ao);
  if (!llm) {
    std::fprintf(stderr, "error: %s\n", llm.err().message.c_str());
    return 2;
  }
  if ((*llm)->model().random_weights())
    std::fprintf(stderr, "NOTICE: %s -- RANDOM weights: the text is not an answer\n",
                 (*llm)->model().description().c_str());
  const double load_ms = ms_since(t0);
  auto img = connectors::read_image(o.image);
  if (!img) {
    std::fprintf(stderr, "error: %s\n", img.err().message.c_str());
    return 2;
  }
  t0 = std::chrono::steady_clock::now();
  // The model's own processor (its preprocessor_config.json), as a pipeline without [input] takes it.
  auto input = graph::input_of_model(o.model);
  if (!input) {
    std::fprintf(stderr, "error: %s\n", input.err().message.c_str());
    return 2;
  }
  input->preprocess.pad_to_square = input->preprocess.pad_to_square || o.pad_to_square;
  auto pre = preprocess(img->view(), input->preprocess);
  if (!pre) {
    std::fprintf(stderr, "error: %s: %s\n", o.image.c_str(), pre.err().message.c_str());
    return 2;
  }
  auto feats = enc->encode_full({pre->pixels.data()});
  if (!feats) {
    std::fprintf(stderr, "error: %s\n", feats.err().message.c_str());
    return 1;
  }
  const double encode_ms = ms_since(t0);
  auto a = (*llm)->ask(0, (*feats)[0].features, o.question);
  if (!a) {
    std::fprintf(stderr, "error: %s\n", a.err().message.c_str());
    return 1;
  }
  const double tokens_per_s = a->decode_ms > 0 ? 1000.0 * static_cast<double>(a->ids.size()) / a->decode_ms : 0.0;
  if (o.json) {
    auto j = connectors::answer_to_json(*a);
    j["image"] = o.image;
    j["model"] = (*llm)->model().description();
    j["latency_ms"]["load"] = load_ms;
    j["latency_ms"]["encode"] = encode_ms;
    j["decode_tokens_per_s"] = tokens_per_s;
    std::printf("%s\n", connectors::to_json_line(j).c_str());
    return 0;
  }
  std::printf("%s%s\n", a->random_weights ? "[random weights] " : "", a->text.c_str());
  std::printf("tokens:");
  for (int id : a->ids) std::printf(" %d", id);
  std::printf("%s\n", a->stopped_on_eos ? " (eos)" : "");
  std::printf("prompt %d tokens (%d image); load %.0f ms, encode %.1f ms, prefill %.1f ms, decode %.1f ms "
              "(%.1f tokens/s)\n",
              a->prompt_tokens, a->image_tokens, load_ms, encode_ms, a->prefill_ms, a->decode_ms, tokens_per_s);
  return 0;
}

}  // namespace vlcache::app
