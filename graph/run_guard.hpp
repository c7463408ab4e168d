#pragma once
/// \file
/// A run must end. SIGINT and SIGTERM are counted while a pipeline runs (the
/// first asks for a drain, a second for no more waiting), and the teardown
/// after the summary is bounded: stuck past its limit, or interrupted by a
/// signal, it says which step stuck and the process exits with the run's
/// code, its output flushed.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace vlcache::graph {

/// Counts SIGINT and SIGTERM from install() until the object goes (those
/// within a second of the last count as one); one at a time in a process
/// (the handlers are process-wide).
class stop_signals {
 public:
  stop_signals() = default;
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;
  ~stop_signals();
  void install();
  [[nodiscard]] unsigned count() const;

 private:
  bool installed_ = false;
  void (*old_int_)(int) = nullptr;
  void (*old_term_)(int) = nullptr;
};

/// Bounds the last step of a run. Armed, a thread waits for the object to go
/// (the step done); past the limit, or at a new signal, it exits the process.
/// Declare it before the actor system so it outlives the system's teardown.
class teardown_watchdog {
 public:
  teardown_watchdog() = default;
  teardown_watchdog(const teardown_watchdog&) = delete;
  teardown_watchdog& operator=(const teardown_watchdog&) = delete;
  ~teardown_watchdog();
  void arm(std::string step, std::chrono::milliseconds limit, const stop_signals& signals, int exit_code);

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace vlcache::graph
