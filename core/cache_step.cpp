#include "core/cache_step.hpp"

#include <algorithm>
#include <numeric>
#include <set>
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

expected<cache_step> cache_step::make(const patch_grid& grid, const gate_thresholds& gate,
                                      const drift_config& drift, const view_memory_config& views) {
  if (auto st = views.validate(); !st) return st.err();
  auto g = reference_gate::make(grid, gate);
  if (!g) return g.err();
  auto d = drift_controller::make(grid.count(), drift);
  if (!d) return d.err();
  return cache_step(std::move(*g), std::move(*d), views);
}

bool cache_step::holds_state(stream_id stream) const {
  for (int p = 0; p < gate_.grid().count(); ++p)
    if (gate_.computed_at(stream, p)) return true;
  return false;
}

status cache_step::plan_view(const step_frame& frame, step_plan& plan) {
  if (plan.decision.miss_share() < view_config_.cut_share || !holds_state(frame.stream)) return {};
  plan.view.save_as = next_view_++;
  // The snapshot this frame hits best, if it hits enough (counted in the
  // snapshot's own gate stats, which nobody reports).
  std::optional<std::pair<stream_id, gate_decision>> best;
  double best_hits = view_config_.match_share;
  for (stream_id v : views_[frame.stream]) {
    auto d = gate_.decide(v, *frame.signatures);
    if (!d) return d.err();
    const double hits = 1.0 - d->miss_share();
    if (hits >= best_hits) {
      best_hits = hits;
      best.emplace(v, std::move(*d));
    }
  }
  if (best) {
    auto p = drift_.plan(best->first, best->second);
    if (!p) return p.err();
    plan.view.restore = best->first;
    plan.decision = std::move(best->second);
    plan.plan = std::move(*p);
    return {};
  }
  // A new view: the stream's state goes with the old one, so the frame runs in full.
  plan.plan = compute_plan{};
  plan.plan.full = true;
  plan.plan.positions.resize(static_cast<std::size_t>(gate_.grid().count()));
  std::iota(plan.plan.positions.begin(), plan.plan.positions.end(), 0);
  plan.plan.from_gate = gate_.grid().count();
  return {};
}

void cache_step::apply_view(stream_id stream, const view_action& action, vision_encoder& encoder) {
  auto& kept = views_[stream];
  ++view_counts_[stream].cuts;
  if (action.save_as) {
    gate_.rename_stream(stream, *action.save_as);
    drift_.rename_stream(stream, *action.save_as);
    encoder.rename_stream(stream, *action.save_as);
    kept.push_back(*action.save_as);
  }
  if (action.restore) {
    // A snapshot the store budget evicted comes back without tokens: the
    // encoder then runs the frame in full, and encode() commits that.
    gate_.rename_stream(*action.restore, stream);
    drift_.rename_stream(*action.restore, stream);
    encoder.rename_stream(*action.restore, stream);
    kept.erase(std::remove(kept.begin(), kept.end(), *action.restore), kept.end());
    ++view_counts_[stream].restored;
  }
  while (kept.size() > static_cast<std::size_t>(view_config_.max_views)) {
    gate_.end_stream(kept.front());
    drift_.end_stream(kept.front());
    encoder.end_stream(kept.front());
    kept.erase(kept.begin());
  }
}

std::vector<stream_id> cache_step::views(stream_id stream) const {
  auto it = views_.find(stream);
  return it == views_.end() ? std::vector<stream_id>{} : it->second;
}

cache_step::view_counts cache_step::view_stats(stream_id stream) const {
  auto it = view_counts_.find(stream);
  return it == view_counts_.end() ? view_counts{} : it->second;
}

expected<std::vector<step_plan>> cache_step::plan(const std::vector<step_frame>& frames) {
  std::set<stream_id> seen;
  std::vector<step_plan> out;
  out.reserve(frames.size());
  for (const auto& f : frames) {
    if (f.signatures == nullptr)
      return error{errc::invalid_argument, "stream " + std::to_string(f.stream) + " frame " +
                                               std::to_string(f.seq) + ": no signatures"};
    if (!seen.insert(f.stream).second)
      return error{errc::invalid_argument, "stream " + std::to_string(f.stream) + " has two frames in one batch"};
    if (view_config_.enabled() && f.stream >= view_memory_config::first_view_id)
      return error{errc::invalid_argument, "stream " + std::to_string(f.stream) +
                                               ": ids from 2^31 up are view memory's"};
    auto d = gate_.decide(f.stream, *f.signatures);
    if (!d) return d.err();
    auto p = drift_.plan(f.stream, *d);
    if (!p) return p.err();
    out.push_back({std::move(*d), std::move(*p), {}});
    if (view_config_.enabled())
      if (auto st = plan_view(f, out.back()); !st) return st.err();
  }
  return out;
}

expected<std::vector<frame_result>> cache_step::encode(vision_encoder& encoder, const std::vector<step_frame>& frames,
                                                       const std::vector<step_plan>& plans) {
  if (plans.size() != frames.size())
    return error{errc::invalid_argument, std::to_string(frames.size()) + " frames but " +
                                             std::to_string(plans.size()) + " plans"};
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (plans[i].view.save_as || plans[i].view.restore) apply_view(frames[i].stream, plans[i].view, encoder);
  std::vector<frame_request> batch;
  batch.reserve(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i)
    batch.push_back({frames[i].stream, frames[i].pixels, plans[i].plan.positions, plans[i].plan.full});
  auto results = encoder.encode(batch);
  if (!results) {
    for (const auto& f : frames) reset(f.stream);
    return results.err();
  }
  for (std::size_t i = 0; i < frames.size(); ++i) {
    // The encoder runs a stream it holds no store for in full: commit what it did.
    compute_plan done = plans[i].plan;
    if ((*results)[i].full && !done.full) {
      done.full = true;
      done.positions.resize(static_cast<std::size_t>(gate_.grid().count()));
      std::iota(done.positions.begin(), done.positions.end(), 0);
    }
    if (auto st = commit(frames[i], done); !st) return st.err();
  }
  return results;
}

expected<std::vector<frame_result>> cache_step::run(vision_encoder& encoder, const std::vector<step_frame>& frames,
                                                    std::vector<step_plan>* plans) {
  auto p = plan(frames);
  if (!p) return p.err();
  auto r = encode(encoder, frames, *p);
  if (plans != nullptr) *plans = std::move(*p);
  return r;
}

status cache_step::commit(const step_frame& frame, const compute_plan& plan) {
  if (auto st = gate_.commit(frame.stream, *frame.signatures, plan.positions, frame.seq); !st) return st;
  drift_.commit(frame.stream, plan);
  return {};
}

void cache_step::reset(stream_id stream) {
  std::vector<int> all(static_cast<std::size_t>(gate_.grid().count()));
  std::iota(all.begin(), all.end(), 0);
  (void)gate_.invalidate(stream, all);  // positions of the grid: cannot fail
  drift_.end_stream(stream);
}

void cache_step::end_stream(stream_id stream, vision_encoder& encoder) {
  for (stream_id v : views(stream)) {
    gate_.end_stream(v);
    drift_.end_stream(v);
    encoder.end_stream(v);
  }
  views_.erase(stream);
  view_counts_.erase(stream);
  gate_.end_stream(stream);
  drift_.end_stream(stream);
  encoder.end_stream(stream);
}

}  // namespace vlcache
