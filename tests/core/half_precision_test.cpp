// f32 <-> IEEE half for the compact token store: exact values, round to
// nearest even, subnormals, overflow to infinity; the same with or without
// the F16C instructions (the fallback is checked by building this file
// with -mno-f16c).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/kernels/sparse_attention.hpp"

namespace vlcache {
namespace {

std::uint16_t half_of(float x) {
  std::uint16_t h = 0;
  to_half(&x, &h, 1);
  return h;
}
float float_of(std::uint16_t h) {
  float f = 0;
  from_half(&h, &f, 1);
  return f;
}

TEST(half_precision, known_bit_patterns) {
  EXPECT_EQ(half_of(0.0f), 0x0000);
  EXPECT_EQ(half_of(-0.0f), 0x8000);
  EXPECT_EQ(half_of(1.0f), 0x3c00);
  EXPECT_EQ(half_of(-2.0f), 0xc000);
  EXPECT_EQ(half_of(65504.0f), 0x7bff);                       // the largest half
  EXPECT_EQ(half_of(1e6f), 0x7c00);                           // overflow: infinity
  EXPECT_EQ(half_of(std::ldexp(1.0f, -24)), 0x0001);          // the smallest subnormal
  EXPECT_EQ(half_of(std::ldexp(1.0f, -14)), 0x0400);          // the smallest normal
  EXPECT_EQ(half_of(1.0f + std::ldexp(1.0f, -11)), 0x3c00);   // a tie rounds to even (down)
  EXPECT_EQ(half_of(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // a tie rounds to even (up)
  EXPECT_EQ(float_of(0x3555), 0.333251953125f);
  EXPECT_EQ(float_of(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(float_of(0x7c00)));
}

TEST(half_precision, round_trip_within_half_an_ulp) {
  std::vector<float> x(1003);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) * std::pow(2.0f, static_cast<float>(i % 17) - 8);
  std::vector<std::uint16_t> h(x.size());
  std::vector<float> back(x.size());
  to_half(x.data(), h.data(), static_cast<std::int64_t>(x.size()));
  from_half(h.data(), back.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::fabs(back[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0f, -11) + std::ldexp(1.0f, -25)) << i;
    EXPECT_EQ(h[i], half_of(x[i])) << "the vector and the scalar path agree at " << i;
  }
}

}  // namespace
}  // namespace vlcache
