#include "core/store_budget.hpp"

#include "core/detail/rename_key.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace vlcache {

status store_budget_config::validate() const {
  if (!(half_life > 0.0) || !std::isfinite(half_life))
    return error{errc::invalid_config, "half_life must be a positive number of frames"};
  return {};
}

std::pair<double, double> store_budget::priority(const entry& e) const {
  switch (config_.policy) {
    case eviction_policy::lru: return {static_cast<double>(e.last_use), 0.0};
    case eviction_policy::lfu: return {static_cast<double>(e.uses), static_cast<double>(e.last_use)};
    case eviction_policy::decayed_frequency:
      // Scores decay alike, so comparing log2(score) + last_use / half_life
      // ranks them as of any common time without touching every entry.
      return {e.log_score, static_cast<double>(e.last_use)};
  }
  return {0.0, 0.0};
}

expected<std::vector<stream_id>> store_budget::make_room(std::uint64_t needed,
                                                         const std::set<stream_id>& keep) const {
  if (!bounded()) return std::vector<stream_id>{};
  const std::uint64_t in_use = used();
  if (in_use + needed <= config_.capacity_bytes) return std::vector<stream_id>{};
  std::vector<std::pair<std::pair<double, double>, stream_id>> candidates;
  std::uint64_t kept = 0;
  for (const auto& [id, e] : streams_) {
    if (keep.count(id)) kept += e.bytes;
    else candidates.push_back({priority(e), id});
  }
  if (kept + needed > config_.capacity_bytes)
    return error{errc::capacity,
                 "the token store budget of " + std::to_string(config_.capacity_bytes) + " bytes cannot hold " +
                     std::to_string(kept + needed) + " bytes for the streams of one batch"};
  std::sort(candidates.begin(), candidates.end());
  std::vector<stream_id> out;
  std::uint64_t freed = 0;
  for (const auto& c : candidates) {
    if (in_use - freed + needed <= config_.capacity_bytes) break;
    out.push_back(c.second);
    freed += streams_.at(c.second).bytes;
  }
  return out;
}

void store_budget::charge(stream_id stream, std::uint64_t bytes) {
  if (bytes == 0) {
    streams_.erase(stream);
    return;
  }
  streams_[stream].bytes = bytes;
}

void store_budget::use(stream_id stream) {
  auto& e = streams_[stream];
  ++now_;
  ++e.uses;
  // log2(2^(old) + 2^(now / half_life)): a use adds 1 at its own time.
  const double at = static_cast<double>(now_) / config_.half_life;
  e.log_score = e.uses == 1 ? at : std::max(e.log_score, at) + std::log2(1.0 + std::exp2(-std::fabs(e.log_score - at)));
  e.last_use = now_;
}

void store_budget::rename(stream_id from, stream_id to) {
  detail::rename_key(streams_, from, to);
}

std::uint64_t store_budget::used() const noexcept {
  std::uint64_t total = 0;
  for (const auto& [id, e] : streams_) total += e.bytes;
  return total;
}

}  // namespace vlcache
