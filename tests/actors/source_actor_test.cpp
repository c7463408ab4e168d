// A camera source in push mode (as the network ingest feeds it) under CAF's
// deterministic scheduler, with a recording planner: its flow limiter holds
// at most max_in_flight frames in the pipeline and applies the drop policy
// beyond, a credit back releases the oldest waiting frame, a lost frame
// tells the planner to refresh, a frame that cannot be preprocessed fails
// alone, and once stopped it reports only after the pipeline drained, with
// every frame read accounted for.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/source_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

struct recorded {
  std::vector<frame_job> planned;
  int refreshes = 0;
  std::vector<source_counters> finished;
};

planner_actor::behavior_type recording_planner(std::shared_ptr<recorded> out) {
  return {
      [out](frame_job& j) { out->planned.push_back(j); },
      [out](refresh_atom, std::uint64_t) { ++out->refreshes; },
      [](stats_atom) { return planner_counters{}; },
      [](stop_atom) { return planner_counters{}; },
  };
}

caf::behavior recording_runner(std::shared_ptr<recorded> out) {
  return {[out](eos_atom, const caf::actor_addr&, const source_counters& c) { out->finished.push_back(c); }};
}

struct source_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  source_fixture() : out(std::make_shared<recorded>()) {}
  ~source_fixture() override {
    caf::anon_send_exit(source, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(runner, caf::exit_reason::user_shutdown);
    sched.run();
  }
  void start(int max_in_flight, int queue, drop_policy policy) {
    source_settings s;
    s.name = "cam";
    s.preprocess.image_size = s.preprocess.shortest_edge = 32;
    s.max_in_flight = max_in_flight;
    s.queue = queue;
    s.policy = policy;  // no video source: push mode
    runner = sys.spawn(recording_runner, out);
    source = sys.spawn(camera_source, s, sys.spawn(recording_planner, out), runner);
    sched.run();
  }
  /// A 32x32 frame; side 0 makes a frame preprocessing refuses.
  void push(std::uint64_t wire_seq, int side = 32) {
    auto img = std::make_shared<connectors::owned_image>();
    img->width = img->height = side;
    img->bgr.assign(static_cast<std::size_t>(side * side * 3), static_cast<std::uint8_t>(wire_seq * 40));
    caf::anon_send(source, pushed_frame{img, wire_seq, 0.0});
    sched.run();
  }
  void done(std::uint64_t seq, frame_outcome o) {
    caf::anon_send(source, done_atom::value, seq, o);
    sched.run();
  }
  source_counters counters() {
    source_counters c;
    auto s = source;
    sys.spawn([&c, s](caf::event_based_actor* self) {
      self->request(s, caf::infinite, stats_atom::value).then([&c](const source_counters& r) { c = r; });
    });
    sched.run();
    return c;
  }
  std::vector<std::uint64_t> planned_seqs() const {
    std::vector<std::uint64_t> v;
    for (const auto& j : out->planned) v.push_back(j.tag.seq);
    return v;
  }
  std::shared_ptr<recorded> out;
  source_actor source;
  caf::actor runner;
};

TEST_F(source_fixture, drop_oldest_holds_the_pipeline_to_its_credits_and_accounts_for_every_frame) {
  start(2, 1, drop_policy::drop_oldest);
  for (std::uint64_t i = 0; i < 5; ++i) push(i);
  EXPECT_EQ(planned_seqs(), (std::vector<std::uint64_t>{0, 1})) << "two credits";
  auto c = counters();
  EXPECT_EQ(c.read, 5u);
  EXPECT_EQ(c.in_flight, 2u);
  EXPECT_EQ(c.queued, 1u);
  EXPECT_EQ(c.dropped_oldest, 2u) << "frames 2 and 3 made room for 4";
  EXPECT_TRUE(c.balanced());

  done(0, frame_outcome::encoded);
  EXPECT_EQ(planned_seqs(), (std::vector<std::uint64_t>{0, 1, 4})) << "the credit released the waiting frame";
  caf::anon_send(source, stop_atom::value);
  sched.run();
  EXPECT_TRUE(out->finished.empty()) << "two frames are still in the pipeline";
  done(1, frame_outcome::failed);
  done(4, frame_outcome::lost);
  EXPECT_EQ(out->refreshes, 1) << "a lost frame's stream is refreshed by its planner";
  ASSERT_EQ(out->finished.size(), 1u) << "reported once drained";
  const auto& f = out->finished[0];
  EXPECT_EQ(f.read, 5u);
  EXPECT_EQ(f.encoded, 1u);
  EXPECT_EQ(f.failed, 2u);
  EXPECT_EQ(f.dropped_oldest, 2u);
  EXPECT_EQ(f.in_flight + f.queued, 0u);
  EXPECT_TRUE(f.balanced());
}

TEST_F(source_fixture, drop_newest_drops_what_finds_no_credit_and_a_bad_frame_fails_alone) {
  start(1, 4, drop_policy::drop_newest);
  push(0);
  push(1);
  push(2, 0);  // preprocessing refuses an empty frame
  EXPECT_EQ(planned_seqs(), (std::vector<std::uint64_t>{0}));
  done(0, frame_outcome::encoded);
  push(3);
  EXPECT_EQ(planned_seqs(), (std::vector<std::uint64_t>{0, 3})) << "sequence numbers count frames read";
  auto c = counters();
  EXPECT_EQ(c.dropped_newest, 1u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(c.queued, 0u) << "drop_newest never queues";
  EXPECT_TRUE(c.balanced());
}

}  // namespace
}  // namespace vlcache::actors
