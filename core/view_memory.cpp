#include "core/view_memory.hpp"

#include <algorithm>
#include <string>

namespace vlcache {

status view_memory_config::validate() const {
  if (max_views < 0 || max_views > 64)
    return error{errc::invalid_config, "max_views " + std::to_string(max_views) + " is outside 0..64"};
  if (!(cut_share > 0.0 && cut_share <= 1.0))
    return error{errc::invalid_config, "cut_share " + std::to_string(cut_share) + " is outside (0, 1]"};
  if (!(match_share > 0.0 && match_share <= 1.0))
    return error{errc::invalid_config, "match_share " + std::to_string(match_share) + " is outside (0, 1]"};
  return {};
}

expected<view_memory> view_memory::make(stream_id stream, const view_memory_config& config) {
  if (auto st = config.validate(); !st) return st.err();
  if (stream > view_memory_config::max_stream)
    return error{errc::invalid_argument, "stream " + std::to_string(stream) + ": view memory takes ids below 2^23"};
  return view_memory(stream, config);
}

bool view_memory::is_cut(const gate_decision& decision, bool holds_state) const {
  return config_.enabled() && holds_state && decision.miss_share() >= config_.cut_share;
}

std::optional<std::size_t> view_memory::best(const std::vector<const gate_decision*>& decisions) const {
  std::optional<std::size_t> best;
  double best_hits = config_.match_share;
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const double hits = 1.0 - decisions[i]->miss_share();
    if (hits >= best_hits) {
      best_hits = hits;
      best = i;
    }
  }
  return best;
}

view_action view_memory::leave(std::optional<stream_id> restore) {
  view_action a;
  ++cuts_;
  if (restore) {
    kept_.erase(std::remove(kept_.begin(), kept_.end(), *restore), kept_.end());
    ++restored_;
    a.restore = restore;
  }
  // The smallest slot no kept view (nor the one restored) uses.
  const stream_id base = view_memory_config::first_view_id | (stream_ << 8);
  for (stream_id slot = 0; slot < 256; ++slot) {
    const stream_id id = base | slot;
    if (std::find(kept_.begin(), kept_.end(), id) == kept_.end() && (!restore || *restore != id)) {
      a.save_as = id;
      break;
    }
  }
  kept_.push_back(*a.save_as);  // 256 slots > max_views + 1: one is always free
  while (kept_.size() > static_cast<std::size_t>(config_.max_views)) {
    a.drop.push_back(kept_.front());
    kept_.erase(kept_.begin());
  }
  return a;
}

std::vector<stream_id> view_memory::clear() {
  auto ids = std::move(kept_);
  kept_.clear();
  return ids;
}

}  // namespace vlcache
