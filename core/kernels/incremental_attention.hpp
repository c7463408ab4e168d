#pragma once
/// \file
/// Attention of reused queries kept exact while a few keys and values
/// change (docs/design/vision-encoder.md, "Layer-wise recompute"). For each query and head the
/// store keeps the softmax's running maximum m, its denominator
/// Z = sum_t exp(s_t - m) and the unnormalised weighted sum
/// N = sum_t exp(s_t - m) v_t. When the keys and values of a few tokens move
/// from old to new, their old terms are subtracted and the new ones added:
/// N / Z is the exact attention output again, at a cost proportional to the
/// tokens that changed instead of all of them. Where the subtraction would
/// cancel most of Z (the query looked mostly at keys that changed), the row
/// is recomputed over all keys, so rounding never dominates.
///
/// Plain C++ on f32 rows (no LibTorch): one call handles a range of
/// (query, head) items, so a caller runs all of a frame's in one parallel
/// region instead of a library call per step.

#include <cstdint>

#include "core/kernels/sparse_attention.hpp"

namespace vlcache {

/// One frame's stored state at one layer.
struct attention_state {
  const float* q = nullptr;    ///< [tokens, width] stored queries, scaled
  const float* k_t = nullptr;  ///< [heads, head_dim, tokens] keys, already the new ones
  const float* v = nullptr;    ///< [tokens, width] values, already the new ones
  float* num = nullptr;        ///< [tokens, width] N per head
  float* z = nullptr;          ///< [tokens, heads]
  float* m = nullptr;          ///< [tokens, heads]
};

/// The keys and values that changed, before and after: keys transposed per
/// head, [heads, head_dim, padded] with padded = count rounded up to 8 (so a
/// query's scores are vector FMAs along the keys), values as rows [count, width].
struct attention_change {
  const float* k_old_t = nullptr;
  const float* v_old = nullptr;
  const float* k_new_t = nullptr;
  const float* v_new = nullptr;
  int count = 0;
  [[nodiscard]] int padded() const noexcept { return (count + 7) / 8 * 8; }
};

/// Items [first, last) of heads x queries (item = head * count + i, the
/// query being queries[i]; head-major, so one head's changed values stay in
/// cache across queries): updates their state and writes their attention
/// output to out[i * width + head * head_dim ...]. Returns how many rows were
/// recomputed over all keys. head_dim must be a multiple of 8.
int attention_update(const attention_state& st, const attention_shape& s, const attention_change& c,
                     const std::int64_t* queries, std::int64_t count, std::int64_t first, std::int64_t last,
                     float* out);

}  // namespace vlcache
