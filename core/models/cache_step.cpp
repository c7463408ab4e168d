#include "core/models/cache_step.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>

namespace vlcache {

expected<cache_step> cache_step::make(const patch_grid& grid, const gate_thresholds& gate,
                                      const drift_config& drift, const view_memory_config& views) {
  if (auto st = views.validate(); !st) return st.err();
  auto g = reference_gate::make(grid, gate);
  if (!g) return g.err();
  auto d = drift_controller::make(grid.count(), drift);
  if (!d) return d.err();
  return cache_step(std::move(*g), std::move(*d), views);
}

status cache_step::plan_view(const step_frame& frame, step_plan& plan) {
  auto it = views_.find(frame.stream);
  if (it == views_.end()) {
    auto v = view_memory::make(frame.stream, view_config_);
    if (!v) return v.err();
    it = views_.emplace(frame.stream, std::move(*v)).first;
  }
  auto& views = it->second;
  auto key = view_key_of(*frame.signatures);
  if (!views.is_cut(plan.decision, key)) {
    views.seen(std::move(key));
    return {};
  }
  plan.cut = true;  // encode() records it (the key of the view left is the previous frame's)
  if (auto restore = views.match(key)) {
    // Judged against the kept view (counted in its own gate stats, which nobody reports).
    auto d = gate_.decide(*restore, *frame.signatures);
    if (!d) return d.err();
    auto p = drift_.plan(*restore, *d);
    if (!p) return p.err();
    plan.decision = std::move(*d);
    plan.plan = std::move(*p);
    plan.restore = restore;
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

const view_memory* cache_step::views(stream_id stream) const {
  auto it = views_.find(stream);
  return it == views_.end() ? nullptr : &it->second;
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
    auto d = gate_.decide(f.stream, *f.signatures);
    if (!d) return d.err();
    auto p = drift_.plan(f.stream, *d);
    if (!p) return p.err();
    step_plan planned;
    planned.decision = std::move(*d);
    planned.plan = std::move(*p);
    out.push_back(std::move(planned));
    if (view_config_.enabled())
      if (auto st = plan_view(f, out.back()); !st) return st.err();
    // Planned only: leave() records the cut when the frame is encoded.
  }
  return out;
}

expected<std::vector<frame_result>> cache_step::encode(vision_encoder& encoder, const std::vector<step_frame>& frames,
                                                       const std::vector<step_plan>& plans) {
  if (plans.size() != frames.size())
    return error{errc::invalid_argument, std::to_string(frames.size()) + " frames but " +
                                             std::to_string(plans.size()) + " plans"};
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (!plans[i].cut) continue;
    // The plan only knew that the frame cuts; the views record it now.
    auto& views = views_.at(frames[i].stream);
    auto action = views.leave(plans[i].restore);
    views.seen(view_key_of(*frames[i].signatures));
    apply_view_action(gate_, frames[i].stream, action);
    apply_view_action(drift_, frames[i].stream, action);
    apply_view_action(encoder, frames[i].stream, action);
  }
  std::vector<frame_request> batch;
  batch.reserve(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i)
    batch.push_back({frames[i].stream, frames[i].pixels, plans[i].plan.positions, plans[i].plan.full,
                     frames[i].layer_tolerance});
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
  if (auto it = views_.find(stream); it != views_.end()) {
    for (stream_id v : it->second.clear()) {
      gate_.end_stream(v);
      drift_.end_stream(v);
      encoder.end_stream(v);
    }
    views_.erase(it);
  }
  gate_.end_stream(stream);
  drift_.end_stream(stream);
  encoder.end_stream(stream);
}

}  // namespace vlcache
