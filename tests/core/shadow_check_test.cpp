// Online fidelity checks: which frames are checked within the time budget,
// and how a check scores cached tokens against the full forward.

#include <gtest/gtest.h>

#include <vector>

#include "core/cache/shadow_check.hpp"

namespace vlcache {
namespace {

TEST(shadow_check, every_nth_frame_within_the_budget) {
  shadow_config c;
  EXPECT_FALSE(shadow_due(c, 10, 0, 100)) << "off by default";
  c.every = 5;
  c.max_share = 0.1;
  EXPECT_FALSE(shadow_due(c, 0, 0, 0)) << "the first frame runs in full anyway";
  EXPECT_FALSE(shadow_due(c, 4, 0, 100));
  EXPECT_TRUE(shadow_due(c, 5, 0, 100));
  EXPECT_TRUE(shadow_due(c, 10, 10, 100)) << "10 s of checks against 100 s of encoding: at the budget";
  EXPECT_FALSE(shadow_due(c, 10, 10.5, 100)) << "over the budget: skipped until encoding catches up";
}

TEST(shadow_check, cosine_per_token) {
  const std::vector<float> full{1, 0, 0, 1, 3, 4};
  const std::vector<float> same = full;
  auto a = compare_tokens(same.data(), full.data(), 3, 2);
  EXPECT_DOUBLE_EQ(a.cosine_mean, 1.0);
  EXPECT_DOUBLE_EQ(a.cosine_min, 1.0);
  const std::vector<float> off{1, 0, 1, 0, 6, 8};  // token 1 orthogonal, token 2 scaled (cosine 1)
  auto b = compare_tokens(off.data(), full.data(), 3, 2);
  EXPECT_NEAR(b.cosine_mean, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(b.cosine_min, 0.0, 1e-12);
}

}  // namespace
}  // namespace vlcache
