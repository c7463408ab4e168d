#include "core/cache/drift_policy.hpp"

#include "core/base/rename_key.hpp"

#include <algorithm>
#include <numeric>
#include <string>

namespace vlcache {

status drift_config::validate() const {
  if (refresh_interval < 0) return error{errc::invalid_config, "refresh_interval must be >= 0"};
  if (max_token_age < 0) return error{errc::invalid_config, "max_token_age must be >= 0"};
  if (changed_share_budget < 0.0 || changed_share_budget > 1e6)
    return error{errc::invalid_config, "changed_share_budget must be >= 0"};
  if (max_tokens_per_frame < 0) return error{errc::invalid_config, "max_tokens_per_frame must be >= 0"};
  return {};
}

expected<drift_controller> drift_controller::make(int positions, const drift_config& config) {
  if (positions <= 0) return error{errc::invalid_argument, "drift control needs at least one position"};
  if (auto st = config.validate(); !st) return st.err();
  return drift_controller(positions, config);
}

expected<compute_plan> drift_controller::plan(stream_id stream, const gate_decision& d) const {
  if (d.miss.size() != static_cast<std::size_t>(n_) || d.score.size() != d.miss.size())
    return error{errc::invalid_argument, "gate decision covers " + std::to_string(d.miss.size()) +
                                             " positions, drift control " + std::to_string(n_)};
  compute_plan p;
  auto it = streams_.find(stream);
  const bool first = it == streams_.end();
  if (first || (config_.refresh_interval > 0 &&
                it->second.frame - it->second.last_full >= static_cast<std::uint64_t>(config_.refresh_interval))) {
    p.full = true;
    p.positions.resize(n_);
    std::iota(p.positions.begin(), p.positions.end(), 0);
    p.from_gate = static_cast<int>(d.miss_positions.size());
    return p;
  }
  const stream_state& s = it->second;
  // Priority: gate misses by how far past threshold, then stale tokens by age.
  std::vector<std::pair<double, int>> ranked;
  for (int pos = 0; pos < n_; ++pos) {
    if (d.miss[pos]) {
      ranked.emplace_back(2.0 + d.score[pos], pos);
      ++p.from_gate;
      continue;
    }
    const std::uint64_t age = s.frame - s.computed[pos];
    if (config_.max_token_age > 0 && age >= static_cast<std::uint64_t>(config_.max_token_age)) {
      ranked.emplace_back(1.0 + std::min(1.0, age * 1e-6), pos);
      ++p.from_age;
    } else if (config_.changed_share_budget > 0 && s.changed[pos] > config_.changed_share_budget) {
      ranked.emplace_back(1.0 + std::min(1.0, s.changed[pos] * 1e-6), pos);
      ++p.from_drift;
    }
  }
  if (config_.max_tokens_per_frame > 0 && ranked.size() > static_cast<std::size_t>(config_.max_tokens_per_frame)) {
    std::partial_sort(ranked.begin(), ranked.begin() + config_.max_tokens_per_frame, ranked.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (std::size_t i = config_.max_tokens_per_frame; i < ranked.size(); ++i)
      if (d.miss[ranked[i].second]) ++p.deferred;
    ranked.resize(config_.max_tokens_per_frame);
  }
  for (const auto& r : ranked) p.positions.push_back(r.second);
  std::sort(p.positions.begin(), p.positions.end());
  return p;
}

void drift_controller::commit(stream_id stream, const compute_plan& p) {
  auto [it, inserted] = streams_.try_emplace(stream);
  stream_state& s = it->second;
  if (inserted) {
    s.computed.assign(n_, 0);
    s.changed.assign(n_, 0.0);
  }
  const std::uint64_t index = s.frame++;  // this frame's index in the stream
  if (p.full) s.last_full = index;
  const double share = static_cast<double>(p.positions.size()) / n_;
  std::vector<bool> done(n_, false);
  for (int pos : p.positions) done[pos] = true;
  for (int pos = 0; pos < n_; ++pos) {
    if (done[pos]) {
      s.computed[pos] = index;
      s.changed[pos] = 0.0;
    } else {
      s.changed[pos] += share;
    }
  }
}

void drift_controller::rename_stream(stream_id from, stream_id to) {
  detail::rename_key(streams_, from, to);
}

}  // namespace vlcache
