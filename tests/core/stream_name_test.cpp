// Stream names at the edge, and the bounded log of refusals.

#include <gtest/gtest.h>

#include "core/base/log_budget.hpp"
#include "core/base/stream_name.hpp"

namespace vlcache {
namespace {

TEST(stream_name, utf8_printable_and_short_or_refused) {
  EXPECT_TRUE(check_stream_name("gate"));
  EXPECT_TRUE(check_stream_name("caf\xc3\xa9-\xe6\x9d\xb1"));  // café-東
  EXPECT_TRUE(check_stream_name("__proto__")) << "valid here; the page keeps names out of object keys";
  EXPECT_FALSE(check_stream_name(""));
  EXPECT_FALSE(check_stream_name("cam\xff"));
  EXPECT_FALSE(check_stream_name("\xc0\xaf")) << "overlong";
  EXPECT_FALSE(check_stream_name("a\nrunning: forged"));
  EXPECT_FALSE(check_stream_name("a\x1b[2J"));
  EXPECT_FALSE(check_stream_name(std::string(65, 'x')));
  const auto e = check_stream_name("cam\xff\n");
  ASSERT_FALSE(e);
  EXPECT_NE(e.err().message.find("cam\\xFF\\x0A"), std::string::npos) << e.err().message;
}

TEST(log_budget, the_first_few_then_one_line_per_interval_with_the_count_suppressed) {
  log_budget b(2, 10.0);
  int lines = 0;
  std::uint64_t suppressed = 0;
  for (int i = 0; i < 1000; ++i)
    if (auto l = b.note("malformed message", i * 0.01)) ++lines, suppressed += l->suppressed;
  EXPECT_EQ(lines, 2) << "10 s have not passed";
  auto l = b.note("malformed message", 20.0);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->suppressed, 998u);
  EXPECT_TRUE(b.note("another reason", 20.0)) << "each reason has its own budget";
}

}  // namespace
}  // namespace vlcache
