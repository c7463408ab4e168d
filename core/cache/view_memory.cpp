#include "core/cache/view_memory.hpp"

#include <algorithm>
#include <cmath>
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

view_key view_key_of(const frame_signatures& sigs) {
  const int n = sigs.grid.count();
  const std::size_t bytes = sigs.patch_bytes();
  view_key key(static_cast<std::size_t>(n), 0.0f);
  if (sigs.patches.size() < bytes * static_cast<std::size_t>(n)) return {};
  for (int p = 0; p < n; ++p) {
    const std::uint8_t* px = sigs.patch(p);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < bytes; ++i) sum += px[i];
    key[static_cast<std::size_t>(p)] = static_cast<float>(sum) / static_cast<float>(bytes);
  }
  return key;
}

double view_key_match(const view_key& a, const view_key& b) {
  if (a.empty() || a.size() != b.size()) return 0.0;
  std::vector<float> diff(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) diff[i] = a[i] - b[i];
  std::vector<float> sorted = diff;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const float offset = sorted[sorted.size() / 2];
  std::size_t agree = 0;
  for (float d : diff) agree += std::fabs(d - offset) <= key_tolerance;
  return static_cast<double>(agree) / static_cast<double>(a.size());
}

bool view_memory::is_cut(const gate_decision& decision, const view_key& frame) const {
  const bool has_references =
      std::any_of(decision.score.begin(), decision.score.end(), [](float x) { return std::isfinite(x); });
  return config_.enabled() && has_references && decision.miss_share() >= config_.cut_share &&
         view_key_match(frame, last_) < config_.match_share;
}

std::optional<stream_id> view_memory::match(const view_key& frame) const {
  std::optional<stream_id> best;
  double best_match = config_.match_share;
  for (const auto& v : kept_) {
    const double m = view_key_match(frame, v.key);
    if (m >= best_match) {
      best_match = m;
      best = v.id;
    }
  }
  return best;
}

view_action view_memory::leave(std::optional<stream_id> restore) {
  view_action a;
  ++cuts_;
  auto is = [](stream_id id) { return [id](const kept_view& v) { return v.id == id; }; };
  if (restore) {
    kept_.erase(std::remove_if(kept_.begin(), kept_.end(), is(*restore)), kept_.end());
    ++restored_;
    a.restore = restore;
  }
  // The smallest slot no kept view (nor the one restored) uses.
  const stream_id base = view_memory_config::first_view_id | (stream_ << 8);
  for (stream_id slot = 0; slot < 256; ++slot) {
    const stream_id id = base | slot;
    if (std::none_of(kept_.begin(), kept_.end(), is(id)) && (!restore || *restore != id)) {
      a.save_as = id;
      break;
    }
  }
  kept_.push_back({*a.save_as, last_});  // 256 slots > max_views + 1: one is always free
  while (kept_.size() > static_cast<std::size_t>(config_.max_views)) {
    a.drop.push_back(kept_.front().id);
    kept_.erase(kept_.begin());
  }
  return a;
}

std::vector<stream_id> view_memory::kept() const {
  std::vector<stream_id> ids;
  for (const auto& v : kept_) ids.push_back(v.id);
  return ids;
}

std::vector<stream_id> view_memory::clear() {
  auto ids = kept();
  kept_.clear();
  return ids;
}

}  // namespace vlcache
