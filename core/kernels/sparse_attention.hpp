#pragma once
/// \file
/// Attention of a few recomputed queries per frame against all keys and
/// values of that frame's token store, for a batch of frames, without a
/// library call per frame and head: scores for every (frame, head) land in
/// one buffer, one softmax runs over all of them, and the weighted sums
/// follow. Queries, outputs and values are rows [tokens, heads * head_dim]
/// as the QKV projection writes them; keys are stored transposed per head,
/// [heads, head_dim, tokens], so a score row is a run of vector FMAs along
/// the tokens instead of one horizontal sum per key.

#include <cstdint>
#include <vector>

namespace vlcache {

struct attention_frame {
  const float* q = nullptr;  ///< [m, width], already scaled by 1/sqrt(head_dim)
  float* out = nullptr;      ///< [m, width]
  float* k_t = nullptr;      ///< [heads, head_dim, tokens]
  const float* v = nullptr;  ///< [tokens, width]
  /// The same store in IEEE half precision (a compact token store): used
  /// instead of k_t and v when set; arithmetic stays f32.
  std::uint16_t* k_t16 = nullptr;
  const std::uint16_t* v16 = nullptr;
  /// The same store in 8 bits: each (token, head) slice of keys and of
  /// values rounded to int8 under one f32 scale (its largest magnitude /
  /// 127), k_scale [heads, tokens] and v_scale [tokens, heads]. Used instead
  /// of the above when set; arithmetic stays f32.
  std::int8_t* k_t8 = nullptr;
  float* k_scale = nullptr;
  std::int8_t* v8 = nullptr;
  float* v_scale = nullptr;
  int m = 0;                 ///< queries of this frame
  std::int64_t score_offset = 0;  ///< first score of this frame: heads * m * tokens each
};

struct attention_shape {
  int tokens = 0, heads = 0, head_dim = 0;
  [[nodiscard]] int width() const noexcept { return heads * head_dim; }
};

/// f32 <-> IEEE half, round to nearest even (F16C when the target has it).
void to_half(const float* in, std::uint16_t* out, std::int64_t n);
void from_half(const std::uint16_t* in, float* out, std::int64_t n);

/// One row [heads * head_dim] to int8 with a scale per head: scale = the
/// head's largest magnitude / 127 (0 for an all-zero head), out = round(in / scale).
void quantize_row(const float* in, int heads, int head_dim, std::int8_t* out, float* scales);

/// Writes the keys of `count` tokens (rows [count, width]) into k_t (or k_t16, or k_t8 and k_scale).
void store_keys(const attention_frame& f, const attention_shape& s, const float* keys,
                const std::int64_t* tokens, int count);
/// The same for one head's rows of k_t only: a token's key touches a line
/// of the transposed store per dimension, so each (frame, head) item writes
/// its own share, after attention_prefetch, in parallel.
void store_keys(const attention_frame& f, const attention_shape& s, const float* keys,
                const std::int64_t* tokens, int count, int head);
/// Writes one head's slice of the values of `count` tokens (rows [count,
/// width]) into an 8-bit store (v8 and v_scale): like store_keys, each
/// (frame, head) item its own share, in parallel.
void store_values_i8(const attention_frame& f, const attention_shape& s, const float* values,
                     const std::int64_t* tokens, int count, int head);
/// Asks for one head's keys and values to be brought into cache (L2) ahead
/// of store_keys, attention_scores and attention_apply: the store is read
/// once a frame, cold, and the tiles' strided walk over it would otherwise
/// wait on each line in turn.
void attention_prefetch(const attention_frame& f, const attention_shape& s, int head);
/// scores[score_offset + (h * m + i) * tokens + t] = q_i,h . k_t,h
void attention_scores(const attention_frame& f, const attention_shape& s, int head, float* scores);
/// The softmax of one head's score rows of the frame, in place, in plain
/// vector loops (a library softmax over every row of the batch was four
/// passes and as many calls per layer). With `row_max` and `row_sum` ([m]
/// each) a row's maximum and its sum of exp(score - maximum) are kept: the
/// running state incremental attention starts from.
void attention_softmax(const attention_frame& f, const attention_shape& s, int head, float* scores,
                       float* row_max = nullptr, float* row_sum = nullptr);
/// out_i,h = sum_t p[...] v_t,h, with p the softmaxed scores.
void attention_apply(const attention_frame& f, const attention_shape& s, int head, const float* probs);

}  // namespace vlcache
