// The probe behind /metrics, the progress lines and the live page: a stage
// that does not answer in time (a detached encoder in a long batch) is
// reported as such, never read as zero figures.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "graph/pipeline_probe.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::graph {
namespace {

/// Takes stats requests and never answers them, like an encoder stuck in work
/// (a stage is asked through its typed stats contract).
actors::encoder_stats_actor::behavior_type silent_encoder(actors::encoder_stats_actor::pointer self,
                                                          std::shared_ptr<std::vector<caf::response_promise>> held) {
  return {[self, held](actors::stats_atom) -> caf::result<actors::encoder_counters> {
    held->push_back(self->make_response_promise());
    return held->back();
  }};
}

/// The same for the answerer's.
actors::answerer_stats_actor::behavior_type silent_answerer(actors::answerer_stats_actor::pointer self,
                                                            std::shared_ptr<std::vector<caf::response_promise>> held) {
  return {[self, held](actors::stats_atom) -> caf::result<actors::answerer_counters> {
    held->push_back(self->make_response_promise());
    return held->back();
  }};
}

actors::encoder_stats_actor::behavior_type answering_encoder() {
  return {[](actors::stats_atom) {
    actors::encoder_counters c;
    c.frames = 10;
    c.tokens = 40;
    c.tokens_per_frame = 16;
    return c;
  }};
}

struct probe_fixture : ::testing::Test {
  probe_fixture() : sys(vlcache::testing::threaded_config()) {}
  caf::actor_system sys;
};

TEST_F(probe_fixture, a_stage_that_does_not_answer_is_named_not_counted_as_zero) {
  auto held = std::make_shared<std::vector<caf::response_promise>>();
  auto encoder = sys.spawn(silent_encoder, held);
  auto answerer = sys.spawn(silent_answerer, held);
  pipeline_probe probe(sys, "p");
  probe.set_stages(encoder, actors::delivery_stats_actor{}, answerer);
  actors::source_counters cam;
  cam.name = "gate";
  probe.source_finished(cam);
  const auto snap = probe.collect(std::chrono::milliseconds(50));
  EXPECT_FALSE(snap.answered("encoder"));
  EXPECT_FALSE(snap.answered("answerer"));
  EXPECT_TRUE(snap.answered("delivery")) << "not part of this pipeline, so not asked";
  const auto text = to_prometheus(snap);
  EXPECT_NE(text.find("vlcache_stage_answered{stage=\"encoder\"} 0"), std::string::npos) << text;
  EXPECT_TRUE(per_stream_json(snap)["gate"]["answered"].is_null());
  caf::anon_send_exit(encoder, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(answerer, caf::exit_reason::user_shutdown);
}

TEST_F(probe_fixture, an_answering_stage_is_counted) {
  auto encoder = sys.spawn(answering_encoder);
  pipeline_probe probe(sys, "p");
  probe.set_stages(encoder, actors::delivery_stats_actor{}, actors::answerer_stats_actor{});
  const auto snap = probe.collect(std::chrono::seconds(5));
  EXPECT_TRUE(snap.answered("encoder"));
  EXPECT_EQ(snap.encoder.tokens, 40u);
  EXPECT_NE(to_prometheus(snap).find("vlcache_stage_answered{stage=\"encoder\"} 1"), std::string::npos);
  caf::anon_send_exit(encoder, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace vlcache::graph
