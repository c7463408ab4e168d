#pragma once
/// \file
/// A fidelity profile: what `vlcache tune` measured for one model shape,
/// and the settings a pipeline takes from it (docs/fidelity.md):
///
///   [profile]  model, image_size, patch_size, hidden_size, layers (the shape
///              it was measured on: another shape is refused), target,
///              percentile, max_err_over_naive, made_from (the footage)
///   [gate]     mad, mad_cell, noise_factor: the gate that met the target cheapest
///   [encoder]  attention_test, weight_dtype, store_dtype
///   [ladder]   tolerances (cheapest first), start (the cheapest rung that
///              met the target on the footage), and per rung what was
///              measured: layer_share, cosine, err_over_naive, speedup
///
/// A pipeline names one with `[encoder] profile`, or finds
/// `vlcache-profile.toml` in the model's folder.

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/cache/fidelity_controller.hpp"
#include "core/cache/reference_gate.hpp"

namespace vlcache::graph {

/// What a profile is valid for: the encoder's grid, width and depth.
struct model_shape {
  int image_size = 0, patch_size = 0, hidden_size = 0, layers = 0;
  [[nodiscard]] bool operator==(const model_shape& o) const noexcept {
    return image_size == o.image_size && patch_size == o.patch_size && hidden_size == o.hidden_size &&
           layers == o.layers;
  }
  [[nodiscard]] std::string describe() const;  ///< "160/16, width 192, 4 layers"
};

/// The shape of a preset or of a snapshot folder's config.json (no weights read).
[[nodiscard]] expected<model_shape> shape_of_model(const std::string& model);

struct rung_measure {
  double layer_share = -1;  ///< tokens recomputed by layer over all
  double cosine = -1;       ///< the target's percentile of token cosines
  double speedup = -1;      ///< against the full forward, same run
  double err_over_naive = -1;  ///< error against the naive error (the previous frame's tokens)
};

struct fidelity_profile {
  std::string model;      ///< what it was measured on (informational)
  std::string made_from;  ///< the footage
  std::string answers;    ///< what answers said at the start rung, when tune had scenes (informational)
  model_shape shape;
  fidelity_target target;
  gate_thresholds gate;
  bool attention_test = true;
  std::string weight_dtype = "f32", store_dtype = "f32";
  std::vector<double> ladder;  ///< tolerances, cheapest first
  int start = 0;
  std::vector<rung_measure> measured;  ///< per rung (may be empty)
};

/// The file written by `vlcache tune`, read back; every error names the
/// file and key.
[[nodiscard]] expected<fidelity_profile> load_fidelity_profile(const std::string& path);
[[nodiscard]] std::string profile_toml(const fidelity_profile& p);
/// Refuses a profile made for another shape, naming both.
[[nodiscard]] status check_profile_shape(const fidelity_profile& p, const std::string& path, const model_shape& model,
                                         const std::string& model_name);
/// The profile file a model's folder may hold.
inline constexpr const char* profile_file_name = "vlcache-profile.toml";

}  // namespace vlcache::graph
