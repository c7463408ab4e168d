#include "actors/hasher_actor.hpp"

#include <caf/all.hpp>

#include "actors/actor_error.hpp"

namespace vlcache::actors {

hasher_actor::behavior_type hasher(std::shared_ptr<const signature_engine> shared) {
  return {
      [shared](const hash_request& req) -> caf::result<hashed_frame> {
        if (!req.image)
          return to_caf_error({errc::invalid_image, "hash request without an image"});
        const auto& img = *req.image;
        const image_view view = img.rgb_view();
        auto sigs = std::make_shared<frame_signatures>();
        if (auto st = shared->compute(view, *sigs); !st) {
          auto e = st.err();
          e.message = "stream " + std::to_string(req.tag.stream) + " frame " +
                      std::to_string(req.tag.seq) + ": " + e.message;
          return to_caf_error(e);
        }
        return hashed_frame{req.tag, std::move(sigs)};
      },
  };
}

}  // namespace vlcache::actors
