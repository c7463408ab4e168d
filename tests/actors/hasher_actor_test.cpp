// The hasher actor inside a real actor system: same signatures as core/,
// errors come back as values naming the frame, and the actor survives them.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/actor_error.hpp"
#include "actors/hasher_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

std::shared_ptr<preprocessed_image> image(int size, int seed) {
  auto img = std::make_shared<preprocessed_image>();
  img->size = size;
  img->rgb.resize(static_cast<std::size_t>(size) * size * 3);
  for (std::size_t i = 0; i < img->rgb.size(); ++i)
    img->rgb[i] = static_cast<std::uint8_t>((i * 31 + seed * 7) % 253);
  return img;
}

struct hasher_fixture : ::testing::Test {
  hasher_fixture() : sys(vlcache::testing::threaded_config()) {}
  caf::actor_system sys;
};

TEST_F(hasher_fixture, replies_with_the_signatures_core_computes) {
  const auto grid = *patch_grid::make(64, 16);
  auto h = sys.spawn(hasher, std::make_shared<const signature_engine>(*signature_engine::make(grid)));
  caf::scoped_actor self{sys};
  const auto img = image(64, 1);
  self->request(h, caf::infinite, hash_request{frame_tag{3, std::string("c3"), 42, 4200.0}, img})
      .receive(
          [&](const hashed_frame& out) {
            EXPECT_EQ(out.tag.stream, 3u);
            EXPECT_EQ(out.tag.seq, 42u);
            auto direct = *signature_engine::make(grid)->compute(
                image_view{img->rgb.data(), 64, 64, 3, 1, 0, channel_order::rgb});
            EXPECT_EQ(out.signatures->ahash, direct.ahash);
            EXPECT_EQ(out.signatures->phash, direct.phash);
          },
          [&](const caf::error& e) { FAIL() << sys.render(e); });
}

TEST_F(hasher_fixture, bad_frame_is_an_error_value_and_the_hasher_keeps_working) {
  auto h = sys.spawn(hasher, std::make_shared<const signature_engine>(
                                         *signature_engine::make(*patch_grid::make(64, 16))));
  caf::scoped_actor self{sys};
  self->request(h, caf::infinite, hash_request{frame_tag{1, std::string("c1"), 7, 0.0}, image(32, 0)})
      .receive([&](const hashed_frame&) { FAIL() << "a 32x32 frame on a 64 grid was accepted"; },
               [&](const caf::error& e) {
                 const auto text = sys.render(e);
                 EXPECT_NE(text.find("stream 1 frame 7"), std::string::npos) << text;
                 EXPECT_NE(text.find("32x32"), std::string::npos) << text;
               });
  bool ok = false;
  self->request(h, caf::infinite, hash_request{frame_tag{1, std::string("c1"), 8, 0.0}, image(64, 0)})
      .receive([&](const hashed_frame&) { ok = true; }, [&](const caf::error& e) { FAIL() << sys.render(e); });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace vlcache::actors
