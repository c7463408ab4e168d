#include "connectors/patch_canvas.hpp"

#include <cstring>

namespace vlcache::connectors {

expected<owned_image> patch_canvas_set::apply(const wire_frame& f) {
  auto h = parse_patches(f);
  if (!h) return h.err();
  auto& c = canvases_[f.stream];
  const int size = static_cast<int>(f.width);
  if (h->keyframe) {
    c.image.width = c.image.height = size;
    c.image.bgr.assign(static_cast<std::size_t>(size) * size * 3, 0);
    c.valid = true;
  } else if (!c.valid) {
    c.last_number = h->number;
    return error{errc::invalid_argument, "patches: waiting for a keyframe (stream '" + f.stream + "')"};
  } else if (h->number != c.last_number + 1) {
    c.valid = false;  // a message was lost: the canvas no longer matches the camera's
    c.last_number = h->number;
    return error{errc::invalid_argument, "patches: message lost before this one, waiting for a keyframe (stream '" +
                                             f.stream + "')"};
  } else if (c.image.width != size) {
    return error{errc::invalid_argument, "patches: frame side changed without a keyframe (stream '" + f.stream + "')"};
  }
  c.last_number = h->number;
  const int p = h->patch_size, side = size / p;
  const std::size_t per = 4 + static_cast<std::size_t>(p) * p * 3;
  const std::uint8_t* at = f.payload.data() + patch_header::bytes;
  for (std::uint32_t i = 0; i < h->count; ++i, at += per) {
    std::uint32_t pos = 0;
    std::memcpy(&pos, at, 4);
    const int y0 = static_cast<int>(pos / side) * p, x0 = static_cast<int>(pos % side) * p;
    for (int y = 0; y < p; ++y)
      std::memcpy(c.image.bgr.data() + (static_cast<std::size_t>(y0 + y) * size + x0) * 3,
                  at + 4 + static_cast<std::size_t>(y) * p * 3, static_cast<std::size_t>(p) * 3);
  }
  return c.image;
}

}  // namespace vlcache::connectors
