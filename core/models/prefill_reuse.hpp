#pragma once
/// \file
/// KV reuse across the frames of a stream (docs/design/language-model.md, prefill_cache).
///
/// A stream's prompt is [prefix][image tokens][suffix]. While the prefix
/// and the image-token count stay the same, a prefill keeps the stream's
/// stored KV: the prefix exactly (causal attention never lets it see what
/// follows), unchanged image tokens approximately (their K/V at later layers
/// were computed with the older image), and recomputes the changed image
/// tokens, the earliest and/or latest image positions, the largest
/// sub-threshold deviations and the whole suffix.
/// Everything else (first frame, new prefix or size, refresh) runs in full.
/// Each image position keeps, as its reference, the features it was last
/// computed with, so a slow drift is caught once it adds up.
///
/// An update is the same step without the suffix: the frames between two
/// answers bring the stream's image K/V up to date, so an answer's prefill
/// computes one frame's changes and its question instead of everything that
/// changed since the previous answer.

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/models/language_model.hpp"
#include "core/models/tokenizer.hpp"

namespace vlcache {

struct reuse_options {
  bool enabled = true;
  int recompute_first = 4;         ///< earliest image positions always recomputed
  /// Latest image positions always recomputed. Between frames of one stream
  /// the prefix is the same, so an unchanged token's stale K/V comes only
  /// from changed tokens before it: the error gathers towards the end.
  int recompute_last = 0;
  int recompute_deviation = 0;     ///< also the N unchanged image tokens that deviate most
  /// Relative L2 change above which a token is changed; 0 = any change. Not
  /// 0 by default: a layer-wise recomputing encoder refreshes every token's
  /// attention a little each frame, and at 0 those slight moves would make
  /// every prefill a full one. The reference keeps the features a token's
  /// K/V were computed with, so small moves that add up are still caught.
  double change_tolerance = 0.05;
  int full_every = 0;              ///< a full prefill every N prefills (updates count) of a stream; 0 = only when needed
};

struct prefill_result {
  tensor_handle logits;      ///< [1, vocab] at the prompt's last position
  bool full = true;          ///< ran every position
  int prompt_tokens = 0;
  int image_tokens = 0;
  int image_recomputed = 0;  ///< image positions recomputed (all of them when full)
  int rows_computed = 0;     ///< positions that went through the layers
  double ms = 0.0;
};

class prefill_cache {
 public:
  prefill_cache(language_model& model, reuse_options options);
  ~prefill_cache();

  /// Prefills `prompt` for `stream` with `features` in its image positions,
  /// reusing the stream's KV where valid. On error the stream's state is
  /// dropped (the next prefill runs in full) and nothing else changes.
  [[nodiscard]] expected<prefill_result> prefill(stream_id stream, const prompt_layout& prompt,
                                                 const tensor_handle& features);

  struct request {
    stream_id stream = 0;
    const prompt_layout* prompt = nullptr;
    const tensor_handle* features = nullptr;
  };
  /// Several streams' prefills in one forward pass (the weights are read
  /// once for all their rows); each stream at most once. `ms` is the batch's
  /// time. A request's error concerns that stream only.
  [[nodiscard]] std::vector<expected<prefill_result>> prefill_batch(const std::vector<request>& batch);
  /// Brings each stream's prefix and image K/V up to `features` (the
  /// prompt's suffix is not computed, and its K/V are dropped): the changed
  /// image tokens only (not the recompute_first/last/deviation ones, which
  /// the next prefill takes), nothing for an unchanged frame, everything
  /// where a prefill would run in full. `logits` stay empty. Errors as prefill_batch.
  [[nodiscard]] std::vector<expected<prefill_result>> update_batch(const std::vector<request>& batch);
  /// The stream's sequence, positioned after the prompt: decode from here.
  /// Generated tokens are cut off again at the next prefill.
  [[nodiscard]] kv_sequence* sequence(stream_id stream);
  void end_stream(stream_id stream);
  [[nodiscard]] std::uint64_t bytes(stream_id stream) const;
  [[nodiscard]] const reuse_options& options() const noexcept { return options_; }

 private:
  struct stream_state;
  struct plan;
  [[nodiscard]] expected<plan> make_plan(const request& q, bool with_suffix);
  [[nodiscard]] std::vector<expected<prefill_result>> run_batch(const std::vector<request>& batch, bool with_suffix);
  void finish(plan& p, const tensor_handle& logits);
  language_model& model_;
  reuse_options options_;
  std::map<stream_id, std::unique_ptr<stream_state>> streams_;
};

}  // namespace vlcache
