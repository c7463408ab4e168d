// A run must end: stop signals are counted (one sent twice at once is one
// request), and a teardown that hangs, or is interrupted, exits the process
// with the run's code instead of holding it forever.

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "graph/run_guard.hpp"

namespace vlcache::graph {
namespace {

using namespace std::chrono_literals;

TEST(run_guard, a_signal_twice_at_once_is_one_request_and_a_later_one_is_another) {
  stop_signals signals;
  signals.install();
  EXPECT_EQ(signals.count(), 0u);
  std::raise(SIGINT);
  std::raise(SIGTERM);  // as `timeout` passes one on: to the child and to its group
  EXPECT_EQ(signals.count(), 1u);
  std::this_thread::sleep_for(1100ms);
  std::raise(SIGINT);
  EXPECT_EQ(signals.count(), 2u);
}

TEST(run_guard, a_teardown_done_in_time_leaves_the_process_alone) {
  stop_signals signals;
  signals.install();
  {
    teardown_watchdog watchdog;
    watchdog.arm("a quick step", 2s, signals, 3);
    std::this_thread::sleep_for(200ms);
  }
  SUCCEED();  // still here: the watchdog went with its step
}

TEST(run_guard, a_hung_teardown_exits_with_the_runs_code_and_names_its_step) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        stop_signals signals;
        signals.install();
        teardown_watchdog watchdog;
        watchdog.arm("stopping the actors", 300ms, signals, 3);
        std::this_thread::sleep_for(30s);  // hung
      },
      ::testing::ExitedWithCode(3), "stopping the actors took over 0 s; exiting without waiting for it");
}

TEST(run_guard, a_signal_during_the_teardown_ends_it_at_once) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        stop_signals signals;
        signals.install();
        teardown_watchdog watchdog;
        watchdog.arm("stopping the actors", 60s, signals, 0);
        std::raise(SIGINT);
        std::this_thread::sleep_for(30s);  // hung
      },
      ::testing::ExitedWithCode(0), "a signal came while stopping the actors");
}

}  // namespace
}  // namespace vlcache::graph
