#include "connectors/patch_shipper.hpp"

#include "core/base/preprocess.hpp"

namespace vlcache::connectors {

expected<patch_shipper> patch_shipper::make(const patch_shipper_config& c) {
  auto grid = patch_grid::make(c.image_size, c.patch_size);
  if (!grid) return grid.err();
  auto engine = signature_engine::make(*grid, c.gate.noise_factor.has_value());
  if (!engine) return engine.err();
  auto gate = reference_gate::make(*grid, c.gate);
  if (!gate) return gate.err();
  return patch_shipper(c, *grid, std::move(*engine), std::move(*gate));
}

status patch_shipper::next(const image_view& frame, std::uint64_t index, wire_frame& w) {
  auto pre = preprocess(frame, preprocess_config::clip(c_.image_size, c_.pad_to_square));
  if (!pre) return pre.err();
  const image_view rgb = pre->rgb_view();
  auto sigs = engine_.compute(rgb);
  if (!sigs) return sigs.err();
  keyframe_ = keyframe_ || since_key_ + 1 >= c_.keyframe_every;
  positions_.clear();
  if (keyframe_) {
    for (int p = 0; p < grid_.count(); ++p) positions_.push_back(p);
  } else {
    auto d = gate_.decide(0, *sigs);
    if (!d) return d.err();
    positions_ = d->miss_positions;
  }
  std::vector<std::uint8_t> bgr(pre->rgb.size());
  for (std::size_t i = 0; i < bgr.size(); i += 3) {
    bgr[i] = pre->rgb[i + 2];
    bgr[i + 1] = pre->rgb[i + 1];
    bgr[i + 2] = pre->rgb[i];
  }
  w.encoding = frame_encoding::patches;
  w.width = w.height = static_cast<std::uint32_t>(pre->size);
  w.payload = encode_patches(bgr.data(), pre->size, c_.patch_size, positions_, keyframe_, number_++);
  sigs_ = std::move(*sigs);
  index_ = index;
  return {};
}

void patch_shipper::sent() {
  (void)gate_.commit(0, sigs_, positions_, index_);
  since_key_ = keyframe_ ? 0 : since_key_ + 1;
  keyframe_ = false;
  patches_ += positions_.size();
}

}  // namespace vlcache::connectors
