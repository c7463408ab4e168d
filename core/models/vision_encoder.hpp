#pragma once
/// \file
/// The CLIP vision tower (plus LLaVA's projector) with sparse recompute.
///
/// Full forward: Hugging Face's eager CLIPVisionModel up to the selected
/// hidden state (no post layer norm), class token dropped for LLaVA's
/// default strategy, then the projector (linear, exact GELU, linear).
///
/// Sparse forward (docs/design/vision-encoder.md, sparse recompute): for the recompute set M of a
/// frame, every layer runs layer norm, QKV, output projection and MLP for M
/// and the class token only, writes their K/V into the stream's per-layer
/// store, and lets their queries attend to all stored keys and values. The
/// token-wise work of every frame in a batch runs as one flat token batch;
/// attention stays per frame. A frame with M empty costs nothing and returns
/// the stored tokens.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/models/clip_config.hpp"
#include "core/base/error.hpp"
#include "core/cache/store_budget.hpp"
#include "core/models/tensor_handle.hpp"

namespace vlcache {

struct encoder_options {
  std::string device = "cpu";  ///< "cpu" or "cuda[:N]"
  std::string dtype = "f32";   ///< "f32"; "f16"/"bf16" on CUDA only
  int threads = 0;             ///< intra-op threads; 0 = the cores available
  std::uint64_t seed = 0;      ///< random presets: 0 = the preset's fixed seed
  /// Run every step through ATen ops, as on CUDA, instead of the CPU kernels
  /// (packed GEMM, batched sparse attention); tests compare the two.
  bool aten_only = false;
  /// Layer-wise recompute (docs/design/vision-encoder.md, "Layer-wise recompute"): at every layer a
  /// reused token whose input moved by more than this share of its norm
  /// since the token's branches were last computed there is recomputed
  /// there (and one whose attention output moved, by attention_tolerance).
  /// 0 = off: a reused token stays reused at every layer, and the store
  /// keeps only keys and values.
  double layer_tolerance = 0.0;
  /// Layer-wise recompute's second test: a reused token also joins once its
  /// attention output (kept exact incrementally) moved by more than this
  /// share since it was last computed there. Negative: the same as
  /// layer_tolerance; 0: not tested, and the store keeps no attention state
  /// (queries, softmax state), which saves the incremental updates: on
  /// random weights they buy nothing, on trained, peaked attention most of
  /// the fidelity (docs/design/vision-encoder.md, "Layer-wise recompute").
  double attention_tolerance = -1.0;
  /// One byte budget for all streams' token stores (unbounded by default):
  /// when a new stream's state would not fit, whole states of other streams
  /// are given up by the policy, and those streams run their next frame in full.
  store_budget_config store_budget;
  /// "f16": keys and values of the token store in IEEE half precision on
  /// the CPU (half the memory; the arithmetic stays f32); "i8": in int8
  /// with an f32 scale per token and head (a quarter, plus the scales).
  /// "f32" by default.
  std::string store_dtype = "f32";
  /// "f16": the transformer layers' weights in IEEE half precision in the
  /// CPU kernels' packed panels, widened to f32 in registers (the arithmetic
  /// stays f32). Few recomputed rows wait on streaming the weights, so half
  /// the bytes is most of the sparse path's time; the full forward, which
  /// uses the same weights, is not slowed. Every output moves by the
  /// weights' rounding (measured by `bench encoder --weight-dtype f16`).
  std::string weight_dtype = "f32";
};

struct full_output {
  tensor_handle features;                    ///< [output_tokens, output_dim]
  std::vector<tensor_handle> hidden_states;  ///< [num_tokens, hidden] each, on request
};

/// One frame of a sparse batch.
struct frame_request {
  stream_id stream = 0;
  const float* pixels = nullptr;  ///< CHW, normalised, image_size square
  std::vector<int> positions;     ///< patch positions (0..num_patches-1) to recompute
  bool full = false;              ///< recompute every token (refresh)
  /// Layer-wise recompute: this frame's tolerance (0: the encoder's). The
  /// fidelity controller (core/cache/fidelity_controller) sets it per stream; the
  /// attention test follows it unless attention_tolerance was set apart.
  double layer_tolerance = 0.0;
};

struct frame_result {
  stream_id stream = 0;
  tensor_handle features;  ///< [output_tokens, output_dim], stored tokens included
  int computed = 0;        ///< patch tokens the frame started with (class token not counted)
  /// Patch tokens whose layer output was recomputed, summed over the layers
  /// (computed x layers unless layer-wise recompute let tokens join).
  std::int64_t layer_tokens = 0;
  bool full = false;       ///< the frame ran the full path (first frame or refresh)
  /// It ran in full because the stream's state had been evicted to make room.
  bool refilled = false;
};

class vision_encoder {
 public:
  /// `model` is a Hugging Face snapshot folder or a preset name. Presets use
  /// random weights; random_weights() then says so.
  [[nodiscard]] static expected<std::unique_ptr<vision_encoder>> load(const std::string& model,
                                                                      const encoder_options& options);
  ~vision_encoder();

  [[nodiscard]] const clip_vision_config& config() const noexcept;
  [[nodiscard]] bool random_weights() const noexcept;
  [[nodiscard]] std::string description() const;
  [[nodiscard]] int threads() const;
  [[nodiscard]] double layer_tolerance() const noexcept;
  /// The attention-output test's tolerance in effect (0: not tested).
  [[nodiscard]] double attention_tolerance() const noexcept;

  /// The reference path: full forward of one or more frames (CHW each).
  [[nodiscard]] expected<std::vector<full_output>> encode_full(const std::vector<const float*>& frames,
                                                               bool hidden_states = false);

  /// Sparse forward of a batch (at most one frame per stream). A stream's
  /// first frame always runs in full. On error nothing is stored.
  [[nodiscard]] expected<std::vector<frame_result>> encode(const std::vector<frame_request>& batch);

  [[nodiscard]] bool has_stream(stream_id stream) const;
  /// Token store bytes of a stream (per-layer K/V, outputs; with layer-wise
  /// recompute the layer state too); 0 when it holds none.
  [[nodiscard]] std::uint64_t store_bytes(stream_id stream) const;
  /// What one stream's state takes: the unit the store budget evicts.
  [[nodiscard]] std::uint64_t state_bytes() const;
  /// All streams' stores together (never above the budget's capacity).
  [[nodiscard]] std::uint64_t store_bytes_total() const;
  /// The most all stores held together after any batch.
  [[nodiscard]] std::uint64_t store_bytes_peak() const;
  /// The store budget's capacity in bytes; 0 = unbounded.
  [[nodiscard]] std::uint64_t store_capacity() const;

  struct eviction_counts {
    std::uint64_t evictions = 0;  ///< times the stream's state was given up for room
    std::uint64_t refills = 0;    ///< frames that ran in full because of it
  };
  [[nodiscard]] eviction_counts evictions(stream_id stream) const;
  void end_stream(stream_id stream);
  /// The token store of `from` (and its charge in the budget) becomes that
  /// of `to`, whose own is freed; `from` then holds none. Eviction counts
  /// stay with the stream ids. View memory keeps a view's store this way.
  void rename_stream(stream_id from, stream_id to);

 private:
  struct impl;
  explicit vision_encoder(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace vlcache
