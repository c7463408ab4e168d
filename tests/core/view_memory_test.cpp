// One stream's kept views: when a frame cuts, which kept view it goes back
// to, the ids views are kept under, and which views are let go.

#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "core/cache/view_memory.hpp"

namespace vlcache {
namespace {

/// A decision missing the first `misses` of `of` positions, judged against
/// references (finite scores) or without any (every score infinite).
gate_decision missing(int misses, int of = 10, bool references = true) {
  gate_decision d;
  d.miss.assign(static_cast<std::size_t>(of), 0);
  d.score.assign(static_cast<std::size_t>(of), references ? 0.5f : std::numeric_limits<float>::infinity());
  for (int p = 0; p < misses; ++p) {
    d.miss[static_cast<std::size_t>(p)] = 1;
    d.miss_positions.push_back(p);
    if (references) d.score[static_cast<std::size_t>(p)] = 2.0f;
  }
  return d;
}

view_memory_config keep(int n) {
  view_memory_config c;
  c.max_views = n;
  return c;
}

view_key flat(std::vector<float> levels) { return levels; }

TEST(view_memory, keys_match_through_a_brightness_change_and_a_few_moved_patches) {
  const view_key a = flat({10, 50, 90, 130, 170, 210, 20, 60, 100, 140});
  view_key brighter = a;
  for (auto& v : brighter) v += 30;  // lighting: the whole view shifts
  EXPECT_DOUBLE_EQ(view_key_match(a, brighter), 1.0);
  view_key crossed = brighter;
  crossed[2] = 250;  // a person in two patches
  crossed[7] = 0;
  EXPECT_DOUBLE_EQ(view_key_match(a, crossed), 0.8);
  const view_key other = flat({200, 10, 30, 250, 5, 90, 180, 220, 15, 60});
  EXPECT_LT(view_key_match(a, other), 0.5);
  EXPECT_EQ(view_key_match(a, flat({1, 2})), 0.0) << "another grid";
}

TEST(view_memory, a_cut_is_a_wholesale_miss_that_no_longer_looks_like_the_last_frame) {
  const view_key here = flat({10, 50, 90, 130, 170, 210, 20, 60, 100, 140});
  const view_key there = flat({200, 10, 30, 250, 5, 90, 180, 220, 15, 60});
  auto v = *view_memory::make(3, keep(2));
  v.seen(here);
  EXPECT_TRUE(v.is_cut(missing(5), there));
  EXPECT_FALSE(v.is_cut(missing(4), there)) << "below cut_share 0.5";
  EXPECT_FALSE(v.is_cut(missing(10, 10, false), there)) << "judged against no references: a first frame leaves no view";
  EXPECT_FALSE(v.is_cut(missing(10), here)) << "the same view, every patch changed a little: not a cut";
  auto off = *view_memory::make(3, keep(0));
  off.seen(here);
  EXPECT_FALSE(off.is_cut(missing(10), there));
}

TEST(view_memory, the_kept_view_that_matches_best_is_restored) {
  const view_key a = flat({10, 50, 90, 130, 170, 210, 20, 60, 100, 140});
  const view_key b = flat({200, 10, 30, 250, 5, 90, 180, 220, 15, 60});
  const view_key c = flat({100, 100, 0, 0, 255, 255, 40, 40, 200, 200});
  auto v = *view_memory::make(3, keep(3));
  v.seen(a);
  const auto left_a = v.leave(std::nullopt);  // to b
  v.seen(b);
  const auto left_b = v.leave(std::nullopt);  // to c
  v.seen(c);
  view_key a_later = a;
  for (auto& x : a_later) x -= 5;
  a_later[0] = 255;
  EXPECT_EQ(v.match(a_later), left_a.save_as);
  EXPECT_EQ(v.match(b), left_b.save_as);
  EXPECT_FALSE(v.match(c).has_value()) << "the view the stream is in is not kept";
}

TEST(view_memory, views_get_ids_of_their_own_and_the_least_recently_left_goes_first) {
  auto v = *view_memory::make(5, keep(2));
  const auto first = v.leave(std::nullopt);
  ASSERT_TRUE(first.save_as);
  EXPECT_GE(*first.save_as, view_memory_config::first_view_id);
  EXPECT_TRUE(first.drop.empty());
  const auto second = v.leave(std::nullopt);
  EXPECT_NE(*second.save_as, *first.save_as);
  const auto third = v.leave(std::nullopt);
  ASSERT_EQ(third.drop.size(), 1u);
  EXPECT_EQ(third.drop[0], *first.save_as) << "at most two kept: the oldest goes";
  // Going back to a kept view: it is the stream's again, not kept.
  const auto back = v.leave(*second.save_as);
  EXPECT_EQ(back.restore, second.save_as);
  EXPECT_NE(*back.save_as, *second.save_as);
  EXPECT_TRUE(back.drop.empty());
  EXPECT_EQ(v.kept(), (std::vector<stream_id>{*third.save_as, *back.save_as}));
  EXPECT_EQ(v.cuts(), 4u);
  EXPECT_EQ(v.restored(), 1u);
  // Another stream's views never share an id with these.
  auto w = *view_memory::make(6, keep(2));
  EXPECT_EQ(std::set<stream_id>({*w.leave(std::nullopt).save_as, *third.save_as, *back.save_as}).size(), 3u);
  EXPECT_EQ(v.clear().size(), 2u);
  EXPECT_TRUE(v.kept().empty());
}

TEST(view_memory, bad_settings_and_stream_ids_are_named) {
  EXPECT_NE(view_memory::make(1u << 23, keep(1)).err().message.find("stream 8388608"), std::string::npos);
  view_memory_config c;
  c.max_views = -1;
  EXPECT_NE(c.validate().err().message.find("max_views -1"), std::string::npos);
  c = view_memory_config{};
  c.cut_share = 0;
  EXPECT_NE(c.validate().err().message.find("cut_share"), std::string::npos);
  c = view_memory_config{};
  c.match_share = 1.5;
  EXPECT_NE(c.validate().err().message.find("match_share"), std::string::npos);
}

}  // namespace
}  // namespace vlcache
