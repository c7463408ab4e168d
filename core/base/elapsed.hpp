#pragma once
/// \file
/// Elapsed time on the steady clock in seconds or milliseconds: one
/// definition for every stage's timings, the commands' and the models'.

#include <chrono>

namespace vlcache {

using steady_clock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_between(steady_clock::time_point from, steady_clock::time_point to) noexcept {
  return std::chrono::duration<double>(to - from).count();
}
[[nodiscard]] inline double ms_between(steady_clock::time_point from, steady_clock::time_point to) noexcept {
  return std::chrono::duration<double, std::milli>(to - from).count();
}
[[nodiscard]] inline double seconds_since(steady_clock::time_point from) noexcept {
  return seconds_between(from, steady_clock::now());
}
[[nodiscard]] inline double ms_since(steady_clock::time_point from) noexcept {
  return ms_between(from, steady_clock::now());
}

}  // namespace vlcache
