#include "graph/run_guard.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace vlcache::graph {
namespace {

std::atomic<unsigned> signals_seen{0};
std::atomic<long long> last_signal_ns{0};

// One signal can arrive twice at once (`timeout` passes it to its child and
// to the child's group; so does a shell's Ctrl-C under a wrapper): signals
// within a second of the last counted one are the same request.
extern "C" void count_signal(int) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const long long ns = static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
  const long long last = last_signal_ns.load();
  if (signals_seen.load() != 0 && ns - last < 1000000000LL) return;
  last_signal_ns.store(ns);
  signals_seen.fetch_add(1);
}

}  // namespace

void stop_signals::install() {
  if (installed_) return;
  signals_seen = 0;
  old_int_ = std::signal(SIGINT, count_signal);
  old_term_ = std::signal(SIGTERM, count_signal);
  installed_ = true;
}

stop_signals::~stop_signals() {
  if (!installed_) return;
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

unsigned stop_signals::count() const { return signals_seen.load(); }

void teardown_watchdog::arm(std::string step, std::chrono::milliseconds limit, const stop_signals& signals,
                            int exit_code) {
  if (thread_.joinable()) return;
  const unsigned seen = signals.count();  // counted here: a signal right after arm() is new
  const auto until = std::chrono::steady_clock::now() + limit;
  thread_ = std::thread([this, step = std::move(step), limit, until, seen, &signals, exit_code] {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (done_cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) return;
      const bool signalled = signals.count() != seen;
      if (!signalled && std::chrono::steady_clock::now() < until) continue;
      if (signalled)
        std::fprintf(stderr, "warning: a signal came while %s; exiting without waiting for it\n", step.c_str());
      else
        std::fprintf(stderr, "warning: %s took over %.0f s; exiting without waiting for it (the summary is complete)\n",
                     step.c_str(), limit.count() / 1000.0);
      std::fflush(nullptr);
      std::_Exit(exit_code);
    }
  });
}

teardown_watchdog::~teardown_watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vlcache::graph
