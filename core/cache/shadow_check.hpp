#pragma once
/// \file
/// Online fidelity (docs/fidelity.md, "The shadow checks"): every N-th
/// frame of a stream also runs the full forward off the critical path and is
/// compared with the cached tokens. This decides which frames are checked,
/// within a budget of the encoder's time, and scores a check.

#include <cstdint>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache {

struct shadow_config {
  int every = 0;           ///< check every N-th frame of a stream; 0 = off
  /// Check time at most this share of the encoder's time (above 1 for
  /// diagnosis: a cheap cached frame costs less than its check).
  double max_share = 0.1;
  double min_cosine = 0;   ///< a check whose mean cosine falls below refreshes the stream; 0 = never

  [[nodiscard]] bool enabled() const noexcept { return every > 0; }
};

/// Whether the stream's `frame`-th frame (counted from 0) is checked, given
/// the time spent on checks and on encoding so far.
[[nodiscard]] bool shadow_due(const shadow_config& c, std::uint64_t frame, double shadow_seconds,
                              double encode_seconds) noexcept;

/// One check: per-token cosine between the cached and the full tokens.
struct token_agreement {
  double cosine_mean = 1.0;
  double cosine_min = 1.0;  ///< the worst token of the frame
};

/// Cosine of two vectors of `dim` floats (1 when both are zero, 0 when one is).
[[nodiscard]] double token_cosine(const float* a, const float* b, std::int64_t dim) noexcept;

/// `cached` and `full` are [tokens, dim] row-major.
[[nodiscard]] token_agreement compare_tokens(const float* cached, const float* full, std::int64_t tokens,
                                             std::int64_t dim) noexcept;

/// One check as the fidelity controller reads it (core/cache/fidelity_controller).
struct check_result {
  std::vector<float> cosines;  ///< per token, cached against full
  double err2 = 0;             ///< sum of squares of cached - full
  double naive2 = -1;          ///< sum of squares of the previous frame's tokens - full; < 0: unknown
  [[nodiscard]] token_agreement agreement() const noexcept;
};

/// Compares [tokens, dim] row-major cached and full tokens; `previous` (the
/// stream's tokens of its previous frame, may be null) gives the naive error.
[[nodiscard]] check_result measure_check(const float* cached, const float* full, const float* previous,
                                         std::int64_t tokens, std::int64_t dim);

}  // namespace vlcache
