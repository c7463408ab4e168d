// Frame delivery under CAF's deterministic scheduler, with recording sinks
// and a recording source: every sink gets each frame's line and the credit
// goes back once all have written it; a sink that is gone fails the frame
// (the credit still comes back, nothing waits forever); a frame behind its
// stream's last is counted out of order; latencies are reported.

#include <gtest/gtest.h>

#include <optional>

#include <caf/all.hpp>

#include "actors/delivery_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

struct recorded {
  std::vector<frame_record> lines;
  std::vector<std::pair<std::uint64_t, frame_outcome>> done;
};

sink_actor::behavior_type recording_sink(std::shared_ptr<recorded> out) {
  return {[out](const frame_record& r) { out->lines.push_back(r); }, [](const answer_record&) {}};
}

credit_actor::behavior_type recording_source(std::shared_ptr<recorded> out) {
  return {
      [out](done_atom, std::uint64_t seq, frame_outcome o) { out->done.emplace_back(seq, o); },
      [](refresh_atom, std::uint64_t) {},
  };
}

struct delivery_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  delivery_fixture() : out(std::make_shared<recorded>()) {
    source = sys.spawn(recording_source, out);
    sched.run();
  }
  ~delivery_fixture() override {
    for (const auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(source, caf::exit_reason::user_shutdown);
    sched.run();
  }
  delivery_actor spawn_delivery(std::vector<sink_actor> sinks) {
    auto d = sys.spawn(actors::delivery, std::move(sinks), delivery_links{});
    actors.push_back(caf::actor_cast<caf::actor>(d));
    sched.run();
    return d;
  }
  sink_actor spawn_sink() {
    auto s = sys.spawn(recording_sink, out);
    actors.push_back(caf::actor_cast<caf::actor>(s));
    return s;
  }
  /// Frame `seq` of stream 0: 4 tokens of width 2, token t = (t, 0), 1 recomputed.
  encoded_frame frame(std::uint64_t seq) {
    encoded_frame f;
    f.job.tag = frame_tag{0, "cam", seq, 0.0};
    f.job.source = source;
    f.job.read_at = f.job.hashed_at = f.job.gated_at = steady::now();
    const std::vector<float> tokens{0, 0, 1, 0, 2, 0, 3, 0};
    f.features = tensor_handle::from_floats(tokens.data(), {4, 2});
    f.positions = std::make_shared<const std::vector<int>>(std::vector<int>{2});
    f.computed = 1;
    f.encoded_at = steady::now();
    return f;
  }
  std::optional<latency_report> report(const delivery_actor& d) {
    std::optional<latency_report> r;
    sys.spawn([&r, d](caf::event_based_actor* self) {
      self->request(d, caf::infinite, stats_atom::value).then([&r](const latency_report& l) { r = l; });
    });
    sched.run();
    return r;
  }
  std::shared_ptr<recorded> out;
  credit_actor source;
  std::vector<caf::actor> actors;
};

TEST_F(delivery_fixture, every_sink_writes_the_frame_then_its_credit_goes_back) {
  auto d = spawn_delivery({spawn_sink(), spawn_sink()});
  caf::anon_send(d, frame(0));
  sched.run();
  ASSERT_EQ(out->lines.size(), 2u) << "one line per sink";
  EXPECT_EQ(out->lines[0].tokens, 4);
  EXPECT_EQ(out->lines[0].dim, 2);
  EXPECT_EQ(out->lines[0].computed, 1);
  EXPECT_DOUBLE_EQ(out->lines[0].token_norm_mean, 1.5) << "norms 0, 1, 2, 3";
  ASSERT_EQ(out->done.size(), 1u) << "one credit, after both sinks";
  EXPECT_EQ(out->done[0], std::make_pair(std::uint64_t{0}, frame_outcome::encoded));
  auto r = report(d);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->frames, 1u);
  EXPECT_EQ(r->stage_ms.at("end_to_end").count(), 1u);
}

TEST_F(delivery_fixture, a_sink_that_is_gone_fails_the_frame_and_the_credit_still_comes_back) {
  auto gone = spawn_sink();
  caf::anon_send_exit(gone, caf::exit_reason::user_shutdown);
  sched.run();
  auto d = spawn_delivery({spawn_sink(), gone});
  caf::anon_send(d, frame(0));
  sched.run();
  EXPECT_EQ(out->lines.size(), 1u) << "the live sink wrote it";
  ASSERT_EQ(out->done.size(), 1u);
  EXPECT_EQ(out->done[0].second, frame_outcome::failed);
}

TEST_F(delivery_fixture, without_sinks_the_credit_goes_back_at_once_and_disorder_is_counted) {
  auto d = spawn_delivery({});
  caf::anon_send(d, frame(1));
  caf::anon_send(d, frame(0));
  sched.run();
  ASSERT_EQ(out->done.size(), 2u);
  auto r = report(d);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out_of_order, 1u) << "frame 0 came after frame 1";
  EXPECT_EQ(r->frames, 2u);
}

}  // namespace
}  // namespace vlcache::actors
