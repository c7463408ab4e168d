#pragma once
/// \file
/// What a model takes as input, read from its own files and not its
/// weights: the grid of its config.json (or preset) and the resize, crop,
/// mean and std of its preprocessor_config.json (CLIP's without one).

#include <string>

#include "core/base/error.hpp"
#include "core/cache/patch_grid.hpp"
#include "core/base/preprocess.hpp"

namespace vlcache::graph {

struct model_input {
  patch_grid grid;
  preprocess_config preprocess;
};

[[nodiscard]] expected<model_input> input_of_model(const std::string& model);
struct model_shape;
/// The same for a model whose shape was read already.
[[nodiscard]] expected<model_input> input_of_model(const std::string& model, const model_shape& shape);

/// The model `vlcache ask` and a config without a model use: the scene
/// model shipped in the repository (models/tiny-llava-scenes).
[[nodiscard]] std::string shipped_model();

}  // namespace vlcache::graph
