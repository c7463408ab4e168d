#include "core/cache/reference_gate.hpp"

#include "core/base/rename_key.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace vlcache {

status gate_thresholds::validate() const {
  auto hamming_ok = [](const std::optional<int>& t, const char* name) -> status {
    if (t && (*t < 0 || *t > 64))
      return error{errc::invalid_config, std::string(name) + " threshold " +
                                             std::to_string(*t) + " is outside [0, 64]"};
    return {};
  };
  if (auto st = hamming_ok(ahash, "ahash"); !st) return st;
  if (auto st = hamming_ok(dhash, "dhash"); !st) return st;
  if (auto st = hamming_ok(phash, "phash"); !st) return st;
  if (mad && !(*mad >= 0.0f && *mad <= 255.0f))
    return error{errc::invalid_config,
                 "mad threshold " + std::to_string(*mad) + " is outside [0, 255]"};
  if (mad_cell < 1 || mad_cell > 64)
    return error{errc::invalid_config, "mad_cell " + std::to_string(mad_cell) + " is outside [1, 64]"};
  if (noise_factor && !mad)
    return error{errc::invalid_config, "noise_factor scales the mad threshold: set mad as well"};
  if (noise_factor && !(*noise_factor > 0.0f && *noise_factor <= 100.0f))
    return error{errc::invalid_config,
                 "noise_factor " + std::to_string(*noise_factor) + " is outside (0, 100]"};
  if (!any())
    return error{errc::invalid_config,
                 "no signature enabled: set at least one of ahash, dhash, phash, mad"};
  return {};
}

expected<reference_gate> reference_gate::make(const patch_grid& grid, const gate_thresholds& t) {
  auto checked = patch_grid::make(grid.image_size, grid.patch_size);
  if (!checked) return checked.err();
  if (auto st = t.validate(); !st) return st.err();
  if (t.mad_cell > checked->patch_size)
    return error{errc::invalid_config, "mad_cell " + std::to_string(t.mad_cell) +
                                           " is larger than the patch (" +
                                           std::to_string(checked->patch_size) + ")"};
  return reference_gate(*checked, t);
}

status reference_gate::check(const frame_signatures& sigs) const {
  const auto n = static_cast<std::size_t>(grid_.count());
  if (sigs.grid.image_size != grid_.image_size || sigs.grid.patch_size != grid_.patch_size)
    return error{errc::invalid_argument,
                 "signatures are for grid " + std::to_string(sigs.grid.image_size) + "/" +
                     std::to_string(sigs.grid.patch_size) + " but the gate is " +
                     std::to_string(grid_.image_size) + "/" + std::to_string(grid_.patch_size)};
  if (sigs.ahash.size() != n || sigs.dhash.size() != n || sigs.phash.size() != n ||
      sigs.patches.size() != n * sigs.patch_bytes())
    return error{errc::invalid_argument, "signatures hold the wrong number of positions for " +
                                             std::to_string(n) + " patches"};
  return {};
}

reference_gate::stream_state& reference_gate::state(stream_id stream) {
  auto it = streams_.find(stream);
  if (it != streams_.end()) return it->second;
  const auto n = static_cast<std::size_t>(grid_.count());
  stream_state s;
  s.ahash.assign(n, 0);
  s.dhash.assign(n, 0);
  s.phash.assign(n, 0);
  s.patches.assign(n * static_cast<std::size_t>(grid_.patch_size) * grid_.patch_size * 3, 0);
  s.computed_at.assign(n, -1);
  s.stats.bytes = 3 * n * sizeof(std::uint64_t) + s.patches.size() + n * sizeof(std::int64_t);
  return streams_.emplace(stream, std::move(s)).first->second;
}

expected<gate_decision> reference_gate::decide(stream_id stream, const frame_signatures& sigs, int first,
                                               int last) {
  if (auto st = check(sigs); !st) return st.err();
  if (last < 0) last = grid_.count();
  if (first < 0 || first > last || last > grid_.count())
    return error{errc::invalid_argument, "position range [" + std::to_string(first) + ", " +
                                             std::to_string(last) + ") is outside the grid"};
  if (thresholds_.noise_factor && sigs.noise_sigma < 0)
    return error{errc::invalid_argument, "noise_factor needs the frame's noise estimate: the signatures carry none "
                                         "(make the signature_engine with estimate_noise)"};
  stream_state& s = state(stream);
  const int n = grid_.count();
  const std::size_t pb = sigs.patch_bytes();
  gate_decision d;
  d.miss.assign(n, 0);
  d.score.assign(n, 0.0f);
  if (thresholds_.noise_factor) update_noise_floor(s, sigs.noise_sigma);
  const float mad = mad_threshold(s);
  d.noise_floor = s.noise_floor;
  d.mad_threshold = mad;
  const float inf = std::numeric_limits<float>::infinity();
  auto ratio = [](float dist, float threshold) { return threshold > 0 ? dist / threshold : (dist > 0 ? 1e9f : 0.0f); };
  for (int pos = first; pos < last; ++pos) {
    float score = 0.0f;
    if (s.computed_at[pos] < 0) {
      score = inf;
    } else {
      if (thresholds_.ahash)
        score = std::max(score, ratio(static_cast<float>(hamming(sigs.ahash[pos], s.ahash[pos])), *thresholds_.ahash));
      if (thresholds_.dhash)
        score = std::max(score, ratio(static_cast<float>(hamming(sigs.dhash[pos], s.dhash[pos])), *thresholds_.dhash));
      if (thresholds_.phash)
        score = std::max(score, ratio(static_cast<float>(hamming(sigs.phash[pos], s.phash[pos])), *thresholds_.phash));
      if (thresholds_.mad)
        score = std::max(score, ratio(cell_mean_abs_diff(sigs.patch(pos), s.patches.data() + pb * pos,
                                                         grid_.patch_size, thresholds_.mad_cell),
                                      mad));
    }
    d.score[pos] = score;
    if (score > 1.0f) {
      d.miss[pos] = 1;
      d.miss_positions.push_back(pos);
    }
  }
  s.stats.misses += d.miss_positions.size();
  s.stats.hits += (last - first) - d.miss_positions.size();
  return d;
}

status reference_gate::commit(stream_id stream, const frame_signatures& sigs,
                              const std::vector<int>& positions, std::uint64_t frame) {
  if (auto st = check(sigs); !st) return st;
  for (int pos : positions)
    if (pos < 0 || pos >= grid_.count())
      return error{errc::invalid_argument, "position " + std::to_string(pos) +
                                               " is outside the grid of " +
                                               std::to_string(grid_.count()) + " patches"};
  stream_state& s = state(stream);
  const std::size_t pb = sigs.patch_bytes();
  for (int pos : positions) {
    s.ahash[pos] = sigs.ahash[pos];
    s.dhash[pos] = sigs.dhash[pos];
    s.phash[pos] = sigs.phash[pos];
    std::copy(sigs.patch(pos), sigs.patch(pos) + pb, s.patches.data() + pb * pos);
    s.computed_at[pos] = static_cast<std::int64_t>(frame);
  }
  return {};
}

status reference_gate::invalidate(stream_id stream, const std::vector<int>& positions) {
  for (int pos : positions)
    if (pos < 0 || pos >= grid_.count())
      return error{errc::invalid_argument, "position " + std::to_string(pos) + " is outside the grid of " +
                                               std::to_string(grid_.count()) + " patches"};
  auto it = streams_.find(stream);
  if (it == streams_.end()) return {};
  for (int pos : positions) it->second.computed_at[pos] = -1;
  return {};
}

std::optional<std::uint64_t> reference_gate::computed_at(stream_id stream, int position) const {
  auto it = streams_.find(stream);
  if (it == streams_.end() || position < 0 || position >= grid_.count() ||
      it->second.computed_at[position] < 0)
    return std::nullopt;
  return static_cast<std::uint64_t>(it->second.computed_at[position]);
}

void reference_gate::update_noise_floor(stream_state& s, float frame_sigma) {
  if (s.noise_history.size() < noise_frames) s.noise_history.push_back(frame_sigma);
  else s.noise_history[s.noise_next] = frame_sigma;
  s.noise_next = (s.noise_next + 1) % noise_frames;
  std::vector<float> sorted = s.noise_history;
  auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  s.noise_floor = *mid;
}

float reference_gate::mad_threshold(const stream_state& s) const {
  if (!thresholds_.mad) return 0.0f;
  if (!thresholds_.noise_factor) return *thresholds_.mad;
  // Two independent noisy samples of a static cell differ by sigma sqrt(2/n)
  // in deviation, 2 sigma / sqrt(pi n) in mean absolute value (n pixels).
  const float noise_mad = 1.1284f * s.noise_floor / static_cast<float>(thresholds_.mad_cell);
  return std::max(*thresholds_.mad, *thresholds_.noise_factor * noise_mad);
}

float reference_gate::noise_floor(stream_id stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() ? 0.0f : it->second.noise_floor;
}

float reference_gate::effective_mad(stream_id stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return thresholds_.mad.value_or(0.0f);
  return mad_threshold(it->second);
}

void reference_gate::end_stream(stream_id stream) { streams_.erase(stream); }

void reference_gate::rename_stream(stream_id from, stream_id to) {
  detail::rename_key(streams_, from, to);
}

cache_stats reference_gate::stats(stream_id stream) const {
  auto it = streams_.find(stream);
  return it == streams_.end() ? cache_stats{} : it->second.stats;
}

}  // namespace vlcache
