// Durations as people write them.

#include <gtest/gtest.h>

#include "core/base/duration_text.hpp"

namespace vlcache {
namespace {

TEST(duration_text, reads_as_written_not_as_printf_prints) {
  EXPECT_EQ(duration_text(0.25), "250 ms");
  EXPECT_EQ(duration_text(2.0), "2 s");
  EXPECT_EQ(duration_text(2.5), "2.5 s");
  EXPECT_EQ(duration_text(12.3), "12 s");
  EXPECT_EQ(duration_text(120.0), "2 min");
  EXPECT_EQ(duration_text(90.0), "1 min 30 s");
  EXPECT_EQ(duration_text(3900.0), "1 h 5 min");
  EXPECT_EQ(duration_text(-1.0), "?");
}

}  // namespace
}  // namespace vlcache
