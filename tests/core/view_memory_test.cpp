// One stream's kept views: when a frame cuts, which kept view it goes back
// to, the ids views are kept under, and which views are let go.

#include <gtest/gtest.h>

#include <set>

#include "core/view_memory.hpp"

namespace vlcache {
namespace {

gate_decision missing(int misses, int of = 10) {
  gate_decision d;
  d.miss.assign(static_cast<std::size_t>(of), 0);
  for (int p = 0; p < misses; ++p) {
    d.miss[static_cast<std::size_t>(p)] = 1;
    d.miss_positions.push_back(p);
  }
  return d;
}

view_memory_config keep(int n) {
  view_memory_config c;
  c.max_views = n;
  return c;
}

TEST(view_memory, a_cut_is_a_wholesale_miss_of_a_stream_holding_state) {
  auto v = *view_memory::make(3, keep(2));
  EXPECT_TRUE(v.is_cut(missing(5), true));
  EXPECT_FALSE(v.is_cut(missing(4), true)) << "below cut_share 0.5";
  EXPECT_FALSE(v.is_cut(missing(10), false)) << "a first frame leaves no view";
  auto off = *view_memory::make(3, keep(0));
  EXPECT_FALSE(off.is_cut(missing(10), true));
}

TEST(view_memory, the_best_view_is_restored_if_it_hits_enough) {
  auto v = *view_memory::make(3, keep(3));
  const auto a = missing(7), b = missing(2), c = missing(4);
  EXPECT_EQ(v.best({&a, &b, &c}), std::optional<std::size_t>(1));
  const auto d = missing(6);
  EXPECT_FALSE(v.best({&a, &d}).has_value()) << "40 % hits is below match_share 0.5";
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
