#include "graph/model_input.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/models/clip_config.hpp"
#include "core/models/processor_config.hpp"
#include "graph/fidelity_profile.hpp"

namespace vlcache::graph {

expected<model_input> input_of_model(const std::string& model) {
  auto shape = shape_of_model(model);
  if (!shape) return shape.err();
  return input_of_model(model, *shape);
}

expected<model_input> input_of_model(const std::string& model, const model_shape& shape) {
  auto grid = patch_grid::make(shape.image_size, shape.patch_size);
  if (!grid) return grid.err();
  model_input in{*grid, preprocess_config::clip(shape.image_size)};
  const auto processor = std::filesystem::path(model) / "preprocessor_config.json";
  if (is_preset_name(model) || !std::filesystem::is_regular_file(processor)) return in;
  std::ifstream f(processor);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto c = parse_processor_config(text, processor.string(), shape.image_size);
  if (!c) return c.err();
  in.preprocess = *c;
  return in;
}

std::string shipped_model() { return VLCACHE_SHIPPED_MODEL; }

}  // namespace vlcache::graph
