// The answer router between frame delivery and the answerer, with a recording
// answerer stand-in under CAF's deterministic scheduler: the policy picks
// the frames passed on, a question on demand is about the stream's latest
// frame, a question about an unknown stream is refused naming it, and with
// keep_kv_current the frames passed over go on as K/V updates.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/answer_router_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

struct recorded {
  std::vector<answer_job> answered;  // frames the policy passed on
  std::vector<answer_job> asked;     // questions on demand
  std::vector<answer_job> updates;   // frames between answers (keep_kv_current)
};

answerer_actor::behavior_type recording_answerer(std::shared_ptr<recorded> out) {
  return {
      [](stats_atom) { return answerer_counters{}; },
      [out](answer_job& j) { out->answered.push_back(j); },
      [out](kv_update_atom, answer_job& j) { out->updates.push_back(j); },
      [out](ask_atom, answer_job& j) {
        out->asked.push_back(j);
        answer_record r;
        r.tag = j.tag;
        r.on_demand = true;
        return r;
      },
      [](work_atom) {},
      [](end_stream_atom, stream_id) {},
      [](auditor_atom, auditor_actor) {},
  };
}

answer_job frame(stream_id stream, std::uint64_t seq, double changed) {
  answer_job j;
  j.tag = frame_tag{stream, "cam" + std::to_string(stream), seq, 0.0};
  j.changed_share = changed;
  return j;
}

struct router_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  explicit router_fixture(bool keep_kv_current = false) : out(std::make_shared<recorded>()) {
    answerer = sys.spawn(recording_answerer, out);
    answer_policy_config policy;
    policy.change_threshold = 0.5;  // and each stream's first frame
    router = sys.spawn(answer_router, answerer, policy, keep_kv_current);
    sched.run();
  }
  ~router_fixture() override {
    caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(answerer, caf::exit_reason::user_shutdown);
    sched.run();
  }
  /// Asks the router as the request endpoint does; the reply or the error text.
  std::string ask(const std::string& stream) {
    std::string reply;
    auto r = router;
    sys.spawn([&reply, r, stream](caf::event_based_actor* self) {
      self->request(r, caf::infinite, ask_atom::value, stream, std::string("what moved?"))
          .then([&reply](const answer_record& a) { reply = "answer about " + a.tag.stream_name + " frame " +
                                                           std::to_string(a.tag.seq); },
                [&reply, self](const caf::error& e) { reply = self->system().render(e); });
    });
    sched.run();
    return reply;
  }
  std::shared_ptr<recorded> out;
  answerer_actor answerer;
  answer_router_actor router;
};

TEST_F(router_fixture, the_policy_picks_the_frames_passed_on) {
  caf::anon_send(router, frame(1, 0, 1.0));  // first frame
  caf::anon_send(router, frame(1, 1, 0.1));  // little changed
  caf::anon_send(router, frame(1, 2, 0.7));  // much changed
  sched.run();
  ASSERT_EQ(out->answered.size(), 2u);
  EXPECT_EQ(out->answered[0].tag.seq, 0u);
  EXPECT_EQ(out->answered[1].tag.seq, 2u);
}

struct router_keeping_kv : router_fixture {
  router_keeping_kv() : router_fixture(true) {}
};

TEST_F(router_fixture, without_keep_kv_current_no_frame_goes_on_as_an_update) {
  for (std::uint64_t seq = 0; seq < 4; ++seq) caf::anon_send(router, frame(1, seq, 0.1));
  sched.run();
  EXPECT_EQ(out->answered.size(), 1u);
  EXPECT_TRUE(out->updates.empty());
}

TEST_F(router_keeping_kv, frames_the_policy_passes_over_go_on_as_updates) {
  caf::anon_send(router, frame(1, 0, 1.0));  // first frame: answered
  caf::anon_send(router, frame(1, 1, 0.1));  // little changed: an update
  caf::anon_send(router, frame(2, 0, 1.0));  // another stream's first frame
  caf::anon_send(router, frame(1, 2, 0.7));  // much changed: answered
  caf::anon_send(router, frame(1, 3, 0.2));
  sched.run();
  ASSERT_EQ(out->answered.size(), 3u);
  ASSERT_EQ(out->updates.size(), 2u);
  EXPECT_EQ(out->updates[0].tag.seq, 1u);
  EXPECT_EQ(out->updates[1].tag.seq, 3u);
  EXPECT_EQ(out->updates[1].tag.stream, 1u);
}

TEST_F(router_fixture, a_question_is_about_the_latest_frame_and_an_unknown_stream_is_named) {
  caf::anon_send(router, frame(1, 0, 1.0));
  caf::anon_send(router, frame(1, 1, 0.1));
  sched.run();
  EXPECT_EQ(ask("cam1"), "answer about cam1 frame 1");
  ASSERT_EQ(out->asked.size(), 1u);
  EXPECT_EQ(out->asked[0].question, "what moved?");
  const auto refused = ask("cam9");
  EXPECT_NE(refused.find("no frame of stream 'cam9' yet (1 streams have frames)"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("cam1"), std::string::npos) << "the other streams' names are not the asker's: " << refused;
  caf::anon_send(router, end_stream_atom::value, stream_id{1});
  sched.run();
  EXPECT_NE(ask("cam1").find("no frame of stream 'cam1'"), std::string::npos) << "the stream ended";
}

}  // namespace
}  // namespace vlcache::actors
