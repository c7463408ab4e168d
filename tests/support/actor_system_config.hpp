#pragma once
/// \file
/// Actor-system configurations for the tests, built once per process (CAF
/// keeps a reference to the config for the system's lifetime).

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/actor_error.hpp"

namespace vlcache::testing {

/// The project's error category and two scheduler threads, as on the CI machine.
inline caf::actor_system_config& threaded_config() {
  static caf::actor_system_config cfg;
  static const bool once = [] {
    actors::register_error_category(cfg);
    cfg.set("scheduler.max-threads", 2);
    return true;
  }();
  (void)once;
  return cfg;
}

/// CAF's deterministic test scheduler: nothing runs until the test calls
/// `run()` on the system's test_coordinator.
inline caf::actor_system_config& deterministic_config() {
  static caf::actor_system_config cfg;
  static const bool once = [] {
    actors::register_error_category(cfg);
    cfg.set("scheduler.policy", caf::atom("testing"));
    return true;
  }();
  (void)once;
  return cfg;
}

/// An actor system on CAF's deterministic scheduler, with the scheduler at
/// hand: a fixture's base for testing one actor's contract.
struct deterministic_system {
  deterministic_system()
      : sys(deterministic_config()), sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
};

}  // namespace vlcache::testing
