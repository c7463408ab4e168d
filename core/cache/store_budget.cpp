#include "core/cache/store_budget.hpp"

#include "core/base/rename_key.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace vlcache {

status store_budget_config::validate() const {
  if (!(half_life > 0.0) || !std::isfinite(half_life))
    return error{errc::invalid_config, "half_life must be a positive number of frames"};
  if (!(hysteresis >= 1.0) || !std::isfinite(hysteresis))
    return error{errc::invalid_config, "hysteresis must be a number >= 1"};
  return {};
}

double store_budget::value_half_life() const {
  return std::max(config_.half_life, 16.0 * static_cast<double>(streams_.size()));
}

double store_budget::saving_of(const entry& e) const {
  if (e.uses == 0) return 0.0;
  return e.saved * std::exp2(-static_cast<double>(now_ - e.last_use) / value_half_life());
}

double store_budget::saving(stream_id stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0.0 : saving_of(it->second);
}

std::pair<double, double> store_budget::priority(const entry& e) const {
  switch (config_.policy) {
    case eviction_policy::value:
      return {saving_of(e) / static_cast<double>(std::max<std::uint64_t>(1, e.bytes)), static_cast<double>(e.last_use)};
    case eviction_policy::lru: return {static_cast<double>(e.last_use), 0.0};
    case eviction_policy::lfu: return {static_cast<double>(e.uses), static_cast<double>(e.last_use)};
    case eviction_policy::decayed_frequency:
      // Scores decay alike, so comparing log2(score) + last_use / half_life
      // ranks them as of any common time without touching every entry.
      return {e.log_score, static_cast<double>(e.last_use)};
  }
  return {0.0, 0.0};
}

bool store_budget::holds(stream_id stream) const {
  auto it = streams_.find(stream);
  return it != streams_.end() && it->second.bytes > 0;
}

expected<std::vector<stream_id>> store_budget::make_room(std::uint64_t needed,
                                                         const std::set<stream_id>& keep) const {
  if (!bounded()) return std::vector<stream_id>{};
  const std::uint64_t in_use = used();
  if (in_use + needed <= config_.capacity_bytes) return std::vector<stream_id>{};
  std::vector<std::pair<std::pair<double, double>, stream_id>> candidates;
  std::uint64_t kept = 0;
  for (const auto& [id, e] : streams_) {
    if (e.bytes == 0) continue;
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

expected<room_plan> store_budget::plan_room(const std::vector<stream_id>& newcomers, std::uint64_t bytes_each,
                                            const std::set<stream_id>& keep) const {
  room_plan plan;
  if (config_.policy != eviction_policy::value || !bounded()) {
    auto victims = make_room(bytes_each * newcomers.size(), keep);
    if (!victims) return victims.err();
    plan.victims = std::move(*victims);
    return plan;
  }
  // The states that could go, least valued first; the newcomers, most valued first.
  std::vector<std::pair<double, stream_id>> held;
  for (const auto& [id, e] : streams_)
    if (e.bytes > 0 && !keep.count(id)) held.push_back({saving_of(e) / static_cast<double>(e.bytes), id});
  std::sort(held.begin(), held.end());
  std::vector<std::pair<double, stream_id>> asking;
  for (stream_id s : newcomers) asking.push_back({saving(s) / static_cast<double>(std::max<std::uint64_t>(1, bytes_each)), s});
  std::sort(asking.begin(), asking.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::uint64_t free = config_.capacity_bytes - std::min(config_.capacity_bytes, used());
  std::size_t next = 0;  // held[next] is the cheapest state still held
  for (const auto& [worth, stream] : asking) {
    std::uint64_t room = free;
    std::size_t take = next;
    // A state goes only for a newcomer clearly worth more per byte.
    const double newcomer = worth;
    while (room < bytes_each && take < held.size() && held[take].first * config_.hysteresis < newcomer)
      room += streams_.at(held[take++].second).bytes;
    if (room < bytes_each) {
      plan.denied.insert(stream);
      continue;
    }
    for (; next < take; ++next) plan.victims.push_back(held[next].second);
    free = room - bytes_each;
  }
  return plan;
}

void store_budget::charge(stream_id stream, std::uint64_t bytes) { streams_[stream].bytes = bytes; }

void store_budget::use(stream_id stream, double saved_share) {
  auto& e = streams_[stream];
  const double carried =
      e.uses == 0 ? 0.0 : e.saved * std::exp2(-static_cast<double>(now_ + 1 - e.last_use) / value_half_life());
  ++now_;
  ++e.uses;
  e.saved = carried + std::clamp(saved_share, 0.0, 1.0);
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
