// Rendered scenes: a pure function of the seed, truth that matches what is
// drawn, and questions whose answers follow from the truth.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/scenes/scene.hpp"

namespace vlcache {
namespace {

scene make(std::uint64_t seed, int frames = 300) {
  scene_config c;
  c.seed = seed;
  c.frames = frames;
  auto s = scene::make(c);
  EXPECT_TRUE(s) << s.err().message;
  return std::move(*s);
}

TEST(scene, the_same_seed_gives_the_same_frames_and_another_seed_others) {
  const auto a = make(7), b = make(7), c = make(8);
  std::vector<std::uint8_t> pa(160 * 160 * 3, 90), pb = pa, pc = pa;
  bool differs = false;
  for (int i = 0; i < 300; i += 37) {
    a.draw(i, pa.data());
    b.draw(i, pb.data());
    c.draw(i, pc.data());
    EXPECT_EQ(pa, pb) << "frame " << i;
    differs |= pa != pc;
    ASSERT_EQ(a.truth(i).questions.size(), b.truth(i).questions.size());
  }
  EXPECT_TRUE(differs);
}

TEST(scene, answers_follow_from_the_objects_in_view) {
  int counted = 0, moving = 0, still = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto s = make(seed);
    for (int i = 0; i < s.frames(); ++i) {
      const auto t = s.truth(i);
      EXPECT_LE(t.objects.size(), 4u);
      std::map<std::string, std::string> answers;
      for (const auto& q : t.questions) answers[q.question] = q.answer;
      const bool any_moving = std::any_of(t.objects.begin(), t.objects.end(), [](const auto& o) { return o.moving(); });
      EXPECT_EQ(answers.at("Is any shape moving?"), any_moving ? "yes" : "no");
      (any_moving ? moving : still)++;
      const bool partly = std::any_of(t.objects.begin(), t.objects.end(), [](const auto& o) { return o.partly; });
      if (partly) {
        EXPECT_EQ(t.questions.size(), 1u) << "only the motion question while a shape is half in view";
        continue;
      }
      ++counted;
      const auto reds = std::count_if(t.objects.begin(), t.objects.end(), [](const auto& o) { return o.color == scene_color::red; });
      EXPECT_EQ(answers.at("How many red shapes are there?"), std::to_string(reds));
      for (const auto& o : t.objects) {
        const std::string what = std::string(to_string(o.color)) + " " + to_string(o.shape);
        EXPECT_EQ(answers.at("Is there a " + what + "?"), "yes");
        if (answers.count("Where is the " + what + "?")) {
          const auto where = answers.at("Where is the " + what + "?");
          EXPECT_EQ(where.rfind(o.y < 80 ? "top" : "bottom", 0), 0u) << where;
        }
      }
    }
  }
  EXPECT_GT(counted, 1000);
  EXPECT_GT(still, moving) << "like a surveillance camera, most frames are still";
  EXPECT_GT(moving, 100);
}

TEST(scene, shapes_are_drawn_where_the_truth_puts_them_and_nowhere_else) {
  const auto s = make(11);
  for (int i = 0; i < s.frames(); i += 50) {
    std::vector<std::uint8_t> px(160 * 160 * 3, 128);
    s.draw(i, px.data());
    const auto t = s.truth(i);
    for (int y = 0; y < 160; ++y)
      for (int x = 0; x < 160; ++x) {
        const bool changed = px[(y * 160 + x) * 3] != 128 || px[(y * 160 + x) * 3 + 1] != 128 || px[(y * 160 + x) * 3 + 2] != 128;
        bool near = false;
        for (const auto& o : t.objects)
          near |= std::hypot(x + 0.5 - o.x, y + 0.5 - o.y) <= 1.3 * o.radius + std::hypot(o.dx, o.dy) + 1.5;
        if (changed) {
          EXPECT_TRUE(near) << "frame " << i << " pixel " << x << "," << y;
        }
      }
    for (const auto& o : t.objects) {
      if (!o.inside || o.moving()) continue;
      const auto* p = &px[(static_cast<int>(o.y) * 160 + static_cast<int>(o.x)) * 3];
      EXPECT_FALSE(p[0] == 128 && p[1] == 128 && p[2] == 128) << "the centre of a still shape is its colour";
    }
  }
}

TEST(scene, bad_configs_are_named) {
  scene_config c;
  c.max_objects = 5;
  auto s = scene::make(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.err().message.find("max_objects"), std::string::npos);
}

}  // namespace
}  // namespace vlcache
