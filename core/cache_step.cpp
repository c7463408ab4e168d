#include "core/cache_step.hpp"

#include <numeric>
#include <set>
#include <string>

namespace vlcache {

expected<cache_step> cache_step::make(const patch_grid& grid, const gate_thresholds& gate,
                                      const drift_config& drift) {
  auto g = reference_gate::make(grid, gate);
  if (!g) return g.err();
  auto d = drift_controller::make(grid.count(), drift);
  if (!d) return d.err();
  return cache_step(std::move(*g), std::move(*d));
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
    out.push_back({std::move(*d), std::move(*p)});
  }
  return out;
}

expected<std::vector<frame_result>> cache_step::encode(vision_encoder& encoder, const std::vector<step_frame>& frames,
                                                       const std::vector<step_plan>& plans) {
  if (plans.size() != frames.size())
    return error{errc::invalid_argument, std::to_string(frames.size()) + " frames but " +
                                             std::to_string(plans.size()) + " plans"};
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

void cache_step::end_stream(stream_id stream) {
  gate_.end_stream(stream);
  drift_.end_stream(stream);
}

}  // namespace vlcache
