#include "core/cache/token_index.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/cache/patch_signatures.hpp"

namespace vlcache {

status token_index_config::validate() const {
  if (capacity_bytes == 0)
    return error{errc::invalid_config, "capacity_bytes must be positive"};
  if (!(half_life > 0.0) || !std::isfinite(half_life))
    return error{errc::invalid_config, "half_life must be a positive number of ticks"};
  return {};
}

std::uint64_t token_index::entry_bytes(std::size_t dim) noexcept {
  constexpr std::uint64_t map_nodes = 160;  // by_key_, by_position_, queue_, entries_ nodes
  return sizeof(slot) + dim * sizeof(float) + map_nodes;
}

expected<token_index> token_index::make(const token_index_config& config) {
  if (auto st = config.validate(); !st) return st.err();
  return token_index(config);
}

token_index::priority token_index::priority_of(const slot& s) const {
  const auto& e = s.entry;
  switch (config_.policy) {
    case eviction_policy::value:  // a single token saves one token's compute alike: value ranks by recency
    case eviction_policy::lru: return {static_cast<double>(e.last_use), 0.0, e.id};
    case eviction_policy::lfu:
      return {static_cast<double>(e.hits), static_cast<double>(e.last_use), e.id};
    case eviction_policy::decayed_frequency:
      return {s.log_score, static_cast<double>(e.last_use), e.id};
  }
  return {0.0, 0.0, e.id};
}

void token_index::touch(slot& s, std::uint64_t now, bool is_hit) {
  queue_.erase({s.prio, s.entry.id});
  // Decayed score at `now` is 2^(log_score - now/h); a use adds 1. Storing it
  // relative to tick 0 keeps entries comparable without rescoring them all.
  const double t = static_cast<double>(now) / config_.half_life;
  const double decayed = std::exp2(s.log_score - t);
  s.log_score = std::log2(decayed + 1.0) + t;
  if (is_hit) ++s.entry.hits;
  s.entry.last_use = std::max(s.entry.last_use, now);
  s.prio = priority_of(s);
  queue_.insert({s.prio, s.entry.id});
}

void token_index::erase(std::uint64_t id, bool evicted) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  const index_entry& e = it->second.entry;
  const std::uint64_t b = entry_bytes(e.token.size());
  queue_.erase({it->second.prio, id});
  auto range = by_key_.equal_range(e.key);
  for (auto k = range.first; k != range.second; ++k)
    if (k->second == id) { by_key_.erase(k); break; }
  auto pos = by_position_.find({e.stream, e.position});
  if (pos != by_position_.end()) {
    auto& ids = pos->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) by_position_.erase(pos);
  }
  auto st = stats_.find(e.stream);
  if (st != stats_.end()) {
    st->second.bytes -= b;
    if (evicted) ++st->second.evictions;
  }
  bytes_ -= b;
  entries_.erase(it);
}

expected<std::uint64_t> token_index::insert(std::uint64_t key, stream_id stream, int position,
                                            std::uint64_t frame, std::vector<float> token,
                                            std::uint64_t now) {
  const std::uint64_t need = entry_bytes(token.size());
  if (need > config_.capacity_bytes)
    return error{errc::capacity, "an entry of " + std::to_string(need) +
                                     " bytes exceeds the index capacity of " +
                                     std::to_string(config_.capacity_bytes) + " bytes"};
  // Replace the entry of the same content at the same place.
  auto same = by_position_.find({stream, position});
  if (same != by_position_.end())
    for (std::uint64_t id : same->second)
      if (entries_.at(id).entry.key == key) { erase(id, false); break; }
  while (bytes_ + need > config_.capacity_bytes && !queue_.empty())
    erase(queue_.begin()->second, true);

  slot s;
  s.entry = index_entry{next_id_++, key, stream, position, frame, 0, now, std::move(token)};
  s.log_score = static_cast<double>(now) / config_.half_life;  // score 1 at `now`
  s.prio = priority_of(s);
  const std::uint64_t id = s.entry.id;
  queue_.insert({s.prio, id});
  by_key_.emplace(key, id);
  by_position_[{stream, position}].push_back(id);
  entries_.emplace(id, std::move(s));
  bytes_ += need;
  stats_[stream].bytes += need;
  return id;
}

const index_entry* token_index::hit(std::uint64_t id, stream_id stream, std::uint64_t now) {
  slot& s = entries_.at(id);
  touch(s, now, true);
  ++stats_[stream].hits;
  return &s.entry;
}

void token_index::miss(stream_id stream) { ++stats_[stream].misses; }

const index_entry* token_index::find(std::uint64_t key, stream_id stream, int position,
                                     std::uint64_t now) {
  auto range = by_key_.equal_range(key);
  std::uint64_t best = 0;
  for (auto it = range.first; it != range.second; ++it) {
    const index_entry& e = entries_.at(it->second).entry;
    if (e.stream == stream && e.position == position) { best = e.id; break; }
    if (best == 0 || e.last_use > entries_.at(best).entry.last_use) best = e.id;
  }
  if (best == 0) { miss(stream); return nullptr; }
  return hit(best, stream, now);
}

const index_entry* token_index::find_near(std::uint64_t key, stream_id stream, int position,
                                          const patch_grid& grid, int radius, int max_hamming,
                                          std::uint64_t now) {
  const int r0 = grid.row_of(position), c0 = grid.col_of(position), side = grid.side();
  std::uint64_t best = 0;
  int best_bits = 65, best_dist = 1 << 30;
  for (int r = std::max(0, r0 - radius); r <= std::min(side - 1, r0 + radius); ++r) {
    for (int c = std::max(0, c0 - radius); c <= std::min(side - 1, c0 + radius); ++c) {
      auto it = by_position_.find({stream, r * side + c});
      if (it == by_position_.end()) continue;
      const int dist = (r - r0) * (r - r0) + (c - c0) * (c - c0);
      for (std::uint64_t id : it->second) {
        const int bits = hamming(entries_.at(id).entry.key, key);
        if (bits > max_hamming) continue;
        if (bits < best_bits || (bits == best_bits && dist < best_dist)) {
          best = id;
          best_bits = bits;
          best_dist = dist;
        }
      }
    }
  }
  if (best == 0) { miss(stream); return nullptr; }
  return hit(best, stream, now);
}

void token_index::end_stream(stream_id stream) {
  std::vector<std::uint64_t> ids;
  for (auto it = by_position_.lower_bound({stream, 0});
       it != by_position_.end() && it->first.first == stream; ++it)
    ids.insert(ids.end(), it->second.begin(), it->second.end());
  for (std::uint64_t id : ids) erase(id, false);
  stats_.erase(stream);
}

cache_stats token_index::stats(stream_id stream) const {
  auto it = stats_.find(stream);
  return it == stats_.end() ? cache_stats{} : it->second;
}

std::vector<std::uint64_t> token_index::eviction_order() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(queue_.size());
  for (const auto& q : queue_) ids.push_back(q.second);
  return ids;
}

}  // namespace vlcache
