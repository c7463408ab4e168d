// vlcache errors carried as CAF errors: every code is an error to CAF (code
// 0 means success there) and keeps its message and its name.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/actor_error.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

TEST(actor_error, every_code_is_an_error_with_its_message_and_name) {
  caf::actor_system sys(vlcache::testing::threaded_config());
  for (auto code : {errc::invalid_argument, errc::invalid_image, errc::invalid_config, errc::not_found,
                    errc::io_error, errc::capacity, errc::busy, errc::cancelled}) {
    const auto e = to_caf_error({code, "what went wrong"});
    ASSERT_TRUE(static_cast<bool>(e)) << to_string(code) << " must not read as success";
    EXPECT_EQ(error_text(sys, e), "what went wrong");
    EXPECT_NE(sys.render(e).find(to_string(code)), std::string::npos) << sys.render(e);
  }
}

}  // namespace
}  // namespace vlcache::actors
