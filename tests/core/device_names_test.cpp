// Device and dtype names: what the spec and the models accept alike.

#include <gtest/gtest.h>

#include "core/base/device_names.hpp"

namespace vlcache {
namespace {

TEST(device_names, cpu_cuda_and_cuda_n_only) {
  EXPECT_FALSE(parse_device_name("cpu")->cuda);
  EXPECT_TRUE(parse_device_name("cuda")->cuda);
  EXPECT_EQ(parse_device_name("cuda:3")->index, 3);
  for (const char* bad : {"cudax", "cuda:", "cuda:a", "CUDA", "tpu", "", "cuda:123456"}) {
    auto d = parse_device_name(bad);
    ASSERT_FALSE(d) << bad;
    EXPECT_EQ(d.err().message, "'" + std::string(bad) + "' (cpu, cuda or cuda:N)");
  }
}

TEST(device_names, reduced_precision_on_cuda_and_bf16_on_cpu_where_allowed) {
  const device_name cpu{}, gpu{true, 0};
  EXPECT_EQ(*parse_dtype_name("f16", gpu), dtype_name::f16);
  EXPECT_FALSE(parse_dtype_name("f16", cpu));
  EXPECT_FALSE(parse_dtype_name("bf16", cpu));
  EXPECT_EQ(*parse_dtype_name("bf16", cpu, true), dtype_name::bf16);
  EXPECT_EQ(parse_dtype_name("f64", gpu).err().message, "'f64' (f32, f16 or bf16)");
}

}  // namespace
}  // namespace vlcache
