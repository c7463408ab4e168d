#include "core/cache/patch_grid.hpp"

#include <string>

namespace vlcache {

expected<patch_grid> patch_grid::make(int image_size, int patch_size) {
  if (patch_size < 2 || patch_size > 64)
    return error{errc::invalid_config,
                 "patch size " + std::to_string(patch_size) + " is outside [2, 64]"};
  if (image_size < patch_size || image_size > 4096)
    return error{errc::invalid_config, "image size " + std::to_string(image_size) +
                                           " is outside [patch size, 4096]"};
  if (image_size % patch_size != 0)
    return error{errc::invalid_config, "image size " + std::to_string(image_size) +
                                           " is not a multiple of patch size " +
                                           std::to_string(patch_size)};
  return patch_grid{image_size, patch_size};
}

}  // namespace vlcache
