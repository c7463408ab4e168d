#pragma once
/// \file
/// The fidelity target and the per-camera controller that holds it.
///
/// The user states the fidelity they need (the visual tokens' cosine against
/// a full recompute at a low percentile, and the answers' agreement with a
/// full recompute); a profile (graph/fidelity_profile, written by `vlcache
/// tune`) gives a ladder of layer-wise tolerances ordered from cheapest to
/// safest. Each stream starts on the profile's rung and moves along the
/// ladder on what the shadow checks measure:
///
/// - the checks at the current rung are judged together (the percentile of
///   their tokens pooled, up to `window` checks);
/// - below target moves it safer (further the further below; at once when one
///   check is past twice the allowed error, else on the second check), and
///   closes the rungs it left for a while (doubled each time one fails
///   again): a stationary input settles instead of oscillating;
/// - `patience` checks comfortably above target (the error 1 - cosine at most
///   `comfort` of the allowed error) move it one rung cheaper, if that rung
///   is open;
/// - an answer that disagreed with the full recompute, while the stream's
///   audited agreement is under its target, moves it safer.
///
/// Pure computation: the encoder actor feeds it and applies its tolerance.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"
#include "core/cache/shadow_check.hpp"

namespace vlcache {

struct fidelity_target {
  double cosine = 0.999;          ///< token cosine against a full recompute ...
  double percentile = 1.0;        ///< ... at this low percentile (in %) of the audited tokens
  /// And, when > 0, the tokens' error against a full recompute at most this
  /// share of the naive error (the previous frame's tokens against the
  /// full recompute: what no recompute at all would give), pooled over the
  /// checks. A cosine alone reads the same at 10 and at 1 frames a second;
  /// this bound is relative to how much the frames change.
  double max_err_over_naive = 0;
  double answer_agreement = 0.99; ///< answers audited against a full recompute that agree

  [[nodiscard]] status validate() const;
};

struct controller_config {
  fidelity_target target;
  /// Layer-wise tolerances, cheapest (largest) first; each > 0.
  std::vector<double> ladder;
  int start = 0;        ///< the rung a new stream starts on
  int window = 8;       ///< checks whose tokens make the reported percentile
  int patience = 4;     ///< comfortable checks in a row before a cheaper rung
  double comfort = 0.5; ///< comfortable: error at most this share of the allowed error
  int backoff = 8;      ///< checks a failed rung stays closed (doubled per failure, at most 256)
  int answer_window = 50;  ///< audited answers whose agreement is reported and judged

  [[nodiscard]] status validate() const;
};

/// The ladder used without a profile: tolerances from 0.4 to 0.01.
[[nodiscard]] std::vector<double> default_ladder();

/// The `percentile` (in %) of `values` by nearest rank (the lowest for small sets).
[[nodiscard]] double low_percentile(std::vector<float> values, double percentile);

struct controller_move {
  int from = 0, to = 0;  ///< rungs; equal when nothing moved
  [[nodiscard]] bool moved() const noexcept { return from != to; }
};

/// One stream as reported (summary, /metrics, live view).
struct controller_report {
  int rung = 0;
  double tolerance = 0;
  double measured = 1.0;  ///< the target's percentile over the checks at the current rung (1 before any)
  double err_over_naive = -1;  ///< over the same checks; < 0 when unknown
  std::uint64_t checks = 0, tighter = 0, looser = 0;
  std::uint64_t answers_audited = 0, answers_agreed = 0;
  double agreement = 1.0;  ///< over the last `answer_window` audits (1 before any)
};

class fidelity_controller {
 public:
  [[nodiscard]] static expected<fidelity_controller> make(controller_config config);

  /// The stream's current tolerance (its rung's; the start rung's when new).
  [[nodiscard]] double tolerance(stream_id stream) const;
  /// A shadow check of the stream.
  controller_move observe(stream_id stream, check_result check);
  /// A shadow check known by its token cosines alone.
  controller_move observe(stream_id stream, const std::vector<float>& token_cosines) {
    return observe(stream, check_result{token_cosines, 0, -1});
  }
  /// An answer audit of the stream: whether the cached answer equalled the full one.
  controller_move observe_answer(stream_id stream, bool agreed);
  [[nodiscard]] controller_report report(stream_id stream) const;
  void end_stream(stream_id stream) { streams_.erase(stream); }
  [[nodiscard]] const controller_config& config() const noexcept { return config_; }

 private:
  struct stream_state {
    int rung = 0;
    std::uint64_t checks = 0, tighter = 0, looser = 0;
    std::deque<check_result> window;         // the last checks at this rung
    std::map<int, std::uint64_t> closed_until;  // rung -> check count it opens again at
    std::map<int, int> backoff;                 // rung -> its current backoff
    std::deque<bool> answers;
    std::uint64_t audited = 0, agreed = 0;
  };
  explicit fidelity_controller(controller_config c) : config_(std::move(c)) {}
  stream_state& state(stream_id stream);
  controller_move tighten(stream_state& s, int steps);
  [[nodiscard]] double agreement(const stream_state& s) const;
  /// How far the window is from the target: 1 at the target, above 1 past
  /// it (the larger of the cosine's and the relative error's shares).
  [[nodiscard]] double severity(const stream_state& s, double* cosine, double* err_over_naive) const;

  controller_config config_;
  std::map<stream_id, stream_state> streams_;
};

}  // namespace vlcache
