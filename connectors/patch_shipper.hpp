#pragma once
/// \file
/// The camera's half of patch shipping (`vlcache camera --ship-patches`):
/// the camera preprocesses each frame as the pipeline would and runs its own
/// reference gate, so only changed patches of the encoder's input cross the
/// network (wire_format's patches encoding); every `keyframe_every`
/// messages, and after a message the socket refused, it sends every patch.

#include <cstdint>
#include <vector>

#include "connectors/wire_format.hpp"
#include "core/base/image.hpp"
#include "core/cache/patch_signatures.hpp"
#include "core/cache/reference_gate.hpp"

namespace vlcache::connectors {

struct patch_shipper_config {
  int image_size = 224, patch_size = 16;
  bool pad_to_square = false;
  int keyframe_every = 50;
  gate_thresholds gate;  ///< the camera's gate (the pipeline's default thresholds)
};

class patch_shipper {
 public:
  [[nodiscard]] static expected<patch_shipper> make(const patch_shipper_config& c);

  /// Fills `w` (size, encoding, payload) for this frame.
  [[nodiscard]] status next(const image_view& frame, std::uint64_t index, wire_frame& w);
  /// The message went out: its patches are the receiver's now.
  void sent();
  /// It did not: the receiver will see a gap, so send everything next.
  void refused() { keyframe_ = true; }
  [[nodiscard]] std::uint64_t patches_sent() const noexcept { return patches_; }

 private:
  patch_shipper(const patch_shipper_config& c, patch_grid grid, signature_engine engine, reference_gate gate)
      : c_(c), grid_(grid), engine_(std::move(engine)), gate_(std::move(gate)) {}
  patch_shipper_config c_;
  patch_grid grid_;
  signature_engine engine_;
  reference_gate gate_;
  frame_signatures sigs_;
  std::vector<int> positions_;
  std::uint64_t index_ = 0, patches_ = 0;
  std::uint32_t number_ = 0;
  int since_key_ = 0;
  bool keyframe_ = true;
};

}  // namespace vlcache::connectors
