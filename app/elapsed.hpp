#pragma once
/// \file
/// Wall-clock milliseconds for the commands' timings (one definition for all).

#include <chrono>

namespace vlcache::app {

using clock_type = std::chrono::steady_clock;

inline double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

}  // namespace vlcache::app
