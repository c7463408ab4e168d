#include "core/cache/fidelity_controller.hpp"

#include <algorithm>
#include <cmath>

namespace vlcache {

status fidelity_target::validate() const {
  if (!(cosine > 0 && cosine <= 1))
    return error{errc::invalid_config, "target " + std::to_string(cosine) + ": a token cosine in (0, 1]"};
  if (!(percentile >= 0 && percentile <= 50))
    return error{errc::invalid_config, "percentile " + std::to_string(percentile) + ": a low percentile in [0, 50]"};
  if (!(max_err_over_naive >= 0 && std::isfinite(max_err_over_naive)))
    return error{errc::invalid_config, "max_err_over_naive " + std::to_string(max_err_over_naive) + ": >= 0 (0: off)"};
  if (!(answer_agreement >= 0 && answer_agreement <= 1))
    return error{errc::invalid_config, "answer_agreement " + std::to_string(answer_agreement) + ": a share in [0, 1]"};
  return {};
}

status controller_config::validate() const {
  if (auto st = target.validate(); !st) return st;
  if (ladder.empty()) return error{errc::invalid_config, "ladder: at least one rung"};
  for (std::size_t i = 0; i < ladder.size(); ++i) {
    if (!(ladder[i] > 0) || !std::isfinite(ladder[i]))
      return error{errc::invalid_config, "ladder[" + std::to_string(i) + "] " + std::to_string(ladder[i]) +
                                             ": a layer tolerance > 0"};
    if (i > 0 && !(ladder[i] < ladder[i - 1]))
      return error{errc::invalid_config, "ladder: tolerances run from cheapest (largest) to safest, but rung " +
                                             std::to_string(i) + " (" + std::to_string(ladder[i]) +
                                             ") is not below rung " + std::to_string(i - 1)};
  }
  if (start < 0 || start >= static_cast<int>(ladder.size()))
    return error{errc::invalid_config, "start rung " + std::to_string(start) + " outside the ladder's " +
                                           std::to_string(ladder.size())};
  if (window < 1 || patience < 1 || backoff < 1 || answer_window < 1 || !(comfort > 0 && comfort <= 1))
    return error{errc::invalid_config, "window, patience, backoff and answer_window >= 1, comfort in (0, 1]"};
  return {};
}

std::vector<double> default_ladder() { return {0.4, 0.3, 0.2, 0.15, 0.1, 0.07, 0.05, 0.035, 0.025, 0.015, 0.01}; }

double low_percentile(std::vector<float> values, double percentile) {
  if (values.empty()) return 1.0;
  const auto rank = static_cast<std::size_t>(std::floor(percentile / 100.0 * static_cast<double>(values.size())));
  const auto k = std::min(rank, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

expected<fidelity_controller> fidelity_controller::make(controller_config config) {
  if (auto st = config.validate(); !st) return st.err();
  return fidelity_controller(std::move(config));
}

fidelity_controller::stream_state& fidelity_controller::state(stream_id stream) {
  auto [it, added] = streams_.try_emplace(stream);
  if (added) it->second.rung = config_.start;
  return it->second;
}

double fidelity_controller::tolerance(stream_id stream) const {
  auto it = streams_.find(stream);
  return config_.ladder[static_cast<std::size_t>(it == streams_.end() ? config_.start : it->second.rung)];
}

controller_move fidelity_controller::tighten(stream_state& s, int steps) {
  const int last = static_cast<int>(config_.ladder.size()) - 1;
  controller_move m{s.rung, std::min(last, s.rung + steps)};
  if (!m.moved()) return m;
  // Every rung it leaves behind stays closed for a while; one that fails
  // again stays closed twice as long.
  for (int r = m.from; r < m.to; ++r) {
    int& b = s.backoff[r];
    b = b == 0 ? config_.backoff : std::min(2 * b, 256);
    s.closed_until[r] = s.checks + static_cast<std::uint64_t>(b);
  }
  s.rung = m.to;
  ++s.tighter;
  return m;
}

double fidelity_controller::severity(const stream_state& s, double* cosine, double* err_over_naive) const {
  // The checks at this rung judged together: the target is a percentile over
  // the checked tokens, not each frame's few worst tokens alone.
  std::vector<float> pooled;
  double err2 = 0, naive2 = 0;
  for (const auto& check : s.window) {
    pooled.insert(pooled.end(), check.cosines.begin(), check.cosines.end());
    if (check.naive2 >= 0) {
      err2 += check.err2;
      naive2 += check.naive2;
    }
  }
  const double c = low_percentile(std::move(pooled), config_.target.percentile);
  const double en = naive2 > 0 ? std::sqrt(err2 / naive2) : -1.0;
  if (cosine != nullptr) *cosine = c;
  if (err_over_naive != nullptr) *err_over_naive = en;
  double sev = (1.0 - c) / std::max(1e-9, 1.0 - config_.target.cosine);
  if (config_.target.max_err_over_naive > 0 && en >= 0) sev = std::max(sev, en / config_.target.max_err_over_naive);
  return sev;
}

controller_move fidelity_controller::observe(stream_id stream, check_result check) {
  auto& s = state(stream);
  ++s.checks;
  s.window.push_back(std::move(check));
  while (s.window.size() > static_cast<std::size_t>(config_.window)) s.window.pop_front();
  const double sev = severity(s, nullptr, nullptr);
  controller_move m{s.rung, s.rung};
  if (sev > 1) {
    // One check far past the target is evidence enough (a pan, a burst of
    // noise); a narrow miss waits for a second check.
    if (s.window.size() < 2 && sev <= 2) return m;
    m = tighten(s, sev > 8 ? 3 : sev > 2 ? 2 : 1);
    if (m.moved()) s.window.clear();
    return m;
  }
  if (sev > config_.comfort) return m;  // met, not by enough to try cheaper: hold
  if (s.window.size() < static_cast<std::size_t>(config_.patience) || s.rung == 0) return m;
  const int cheaper = s.rung - 1;
  auto closed = s.closed_until.find(cheaper);
  if (closed != s.closed_until.end() && s.checks < closed->second) return m;
  s.rung = cheaper;
  s.window.clear();
  ++s.looser;
  m.to = cheaper;
  return m;
}

double fidelity_controller::agreement(const stream_state& s) const {
  if (s.answers.empty()) return 1.0;
  const auto agreed = std::count(s.answers.begin(), s.answers.end(), true);
  return static_cast<double>(agreed) / static_cast<double>(s.answers.size());
}

controller_move fidelity_controller::observe_answer(stream_id stream, bool agreed) {
  auto& s = state(stream);
  ++s.audited;
  s.agreed += agreed ? 1 : 0;
  s.answers.push_back(agreed);
  while (s.answers.size() > static_cast<std::size_t>(config_.answer_window)) s.answers.pop_front();
  if (!agreed && agreement(s) < config_.target.answer_agreement) return tighten(s, 1);
  return {s.rung, s.rung};
}

controller_report fidelity_controller::report(stream_id stream) const {
  controller_report r;
  auto it = streams_.find(stream);
  r.rung = it == streams_.end() ? config_.start : it->second.rung;
  r.tolerance = config_.ladder[static_cast<std::size_t>(r.rung)];
  if (it == streams_.end()) return r;
  const auto& s = it->second;
  (void)severity(s, &r.measured, &r.err_over_naive);
  r.checks = s.checks;
  r.tighter = s.tighter;
  r.looser = s.looser;
  r.answers_audited = s.audited;
  r.answers_agreed = s.agreed;
  r.agreement = agreement(s);
  return r;
}

}  // namespace vlcache
