#pragma once
/// \file
/// A LLaMA-family decoder (Hugging Face's eager LlamaForCausalLM: RMSNorm,
/// half-split rotary embeddings, grouped-query attention, SwiGLU MLP, tied or
/// separate lm_head) with a KV cache, greedy and top-p sampling.
///
/// The forward pass takes rows at arbitrary positions of a sequence: the
/// rows' K/V are written at their positions and their queries attend
/// causally to everything stored up to their position. Appending a prompt is
/// the special case of consecutive positions at the end; recomputing a
/// subset of an earlier prompt (KV reuse across frames) is the general one.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/models/llama_config.hpp"
#include "core/models/tensor_handle.hpp"

namespace vlcache {

struct llm_options {
  std::string device = "cpu";  ///< "cpu" or "cuda[:N]"
  std::string dtype = "f32";   ///< "f32"; "f16"/"bf16" on CUDA only
  int threads = 0;             ///< intra-op threads; 0 = the cores available
  std::uint64_t seed = 0;      ///< random presets: 0 = the preset's fixed seed
  int vocab_size = 0;          ///< presets: the tokenizer's pieces + 1 (the image token)
};

/// The KV cache of one token sequence.
class kv_sequence {
 public:
  kv_sequence();
  ~kv_sequence();
  kv_sequence(kv_sequence&&) noexcept;
  kv_sequence& operator=(kv_sequence&&) noexcept;

  [[nodiscard]] int length() const noexcept;
  /// Forgets every position from `length` on.
  void truncate(int length) noexcept;
  [[nodiscard]] std::uint64_t bytes() const;

 private:
  friend class language_model;
  struct state;
  std::unique_ptr<state> s_;
};

struct sampling_options {
  double temperature = 0.0;  ///< 0 = greedy
  double top_p = 1.0;        ///< nucleus sampling when temperature > 0
  std::uint64_t seed = 0;
  int max_new_tokens = 32;
};

struct generation {
  std::vector<int> ids;       ///< generated tokens (the EOS included when it ended the answer)
  bool stopped_on_eos = false;
  bool stopped_by_caller = false;  ///< the token hook said stop (a stop string, a client gone)
  double decode_ms = 0.0;
};

class language_model {
 public:
  /// `model` is a Hugging Face snapshot folder (standalone LLaMA, old or new
  /// llava-hf layout) or a preset name (random weights; random_weights() says so).
  [[nodiscard]] static expected<std::unique_ptr<language_model>> load(const std::string& model,
                                                                      const llm_options& options);
  ~language_model();

  [[nodiscard]] const llama_config& config() const noexcept;
  [[nodiscard]] bool random_weights() const noexcept;
  [[nodiscard]] std::string description() const;

  /// Token embeddings of `ids` [T, hidden]; where `image_features` is given,
  /// its rows replace the image-token positions in order (LLaVA's merge);
  /// without it, image tokens get their own embedding row.
  /// Errors name an id outside the vocabulary or a count/width mismatch.
  [[nodiscard]] expected<tensor_handle> embed(const std::vector<int>& ids,
                                              const tensor_handle* image_features = nullptr) const;

  /// Runs `rows` ([n, hidden], one per entry of `positions`, ascending)
  /// through every layer. Positions must lie inside the sequence or extend
  /// it without a gap. Returns logits [n, vocab] with `all_logits`, else of
  /// the last row [1, vocab].
  [[nodiscard]] expected<tensor_handle> forward(kv_sequence& seq, const tensor_handle& rows,
                                                const std::vector<int>& positions, bool all_logits = false);
  /// forward() for several sequences at once (each at most once): the
  /// token-wise work runs on all their rows together, so the weights are
  /// read once for the batch. Logits per sequence, as forward() returns them.
  [[nodiscard]] expected<std::vector<tensor_handle>> forward_batch(const std::vector<kv_sequence*>& seqs,
                                                                   const std::vector<tensor_handle>& rows,
                                                                   const std::vector<std::vector<int>>& positions,
                                                                   bool all_logits = false);
  /// forward() at the positions after the sequence's end.
  [[nodiscard]] expected<tensor_handle> append(kv_sequence& seq, const tensor_handle& rows, bool all_logits = false);

  /// Called with each picked token (the index of its sequence, the id);
  /// returning false ends that sequence there (the token is kept).
  using token_hook = std::function<bool(std::size_t sequence, int id)>;

  /// Picks tokens from `last_logits` on, appending each to `seq`, until EOS,
  /// max_new_tokens or the hook says stop.
  [[nodiscard]] expected<generation> generate(kv_sequence& seq, const tensor_handle& last_logits,
                                              const sampling_options& sampling, const token_hook& on_token = {});
  /// generate() for several sequences, stepping together (each step's rows
  /// in one forward pass); a sequence that ends drops out. decode_ms is the
  /// time until each one ended.
  [[nodiscard]] expected<std::vector<generation>> generate_batch(const std::vector<kv_sequence*>& seqs,
                                                                 const std::vector<tensor_handle>& last_logits,
                                                                 const sampling_options& sampling,
                                                                 const token_hook& on_token = {});
  /// The next token for one row of logits (greedy or sampled).
  [[nodiscard]] int pick(const tensor_handle& logits, const sampling_options& sampling, std::uint64_t step) const;

 private:
  struct impl;
  explicit language_model(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace vlcache
