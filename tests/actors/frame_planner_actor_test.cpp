// A camera's frame planner between real hashers and cache shards, with the
// encoder and the source as recording stand-ins, under CAF's deterministic
// scheduler: frames reach the encoder in order with the cache step's plans,
// a frame that cannot be hashed goes back to its source as failed while the
// next ones go on, and a refresh makes the next plan full.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/frame_planner_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

struct recorded {
  std::vector<frame_job> encoded;  // in arrival order
  std::vector<std::pair<std::uint64_t, frame_outcome>> done;
};

encoder_actor::behavior_type recording_encoder(std::shared_ptr<recorded> out) {
  return {
      [out](frame_job& j) { out->encoded.push_back(j); },
      [](flush_atom, std::uint64_t) {},
      [](stats_atom) { return encoder_counters{}; },
      [](const view_change&) {},
      [](end_stream_atom, stream_id) {},
      [](full_atom, const full_request&) { return full_reply{}; },
      [](audit_atom, stream_id, bool) {},
  };
}

credit_actor::behavior_type recording_source(std::shared_ptr<recorded> out) {
  return {
      [out](done_atom, std::uint64_t seq, frame_outcome o) { out->done.emplace_back(seq, o); },
      [](refresh_atom, std::uint64_t) {},
  };
}

/// A 32x32 frame (4x4 patches of 8 px); `variant` repaints patches 5 and 6.
std::shared_ptr<const preprocessed_image> image(int variant) {
  auto img = std::make_shared<preprocessed_image>();
  img->size = 32;
  img->rgb.resize(32 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) {
        const int patch = (y / 8) * 4 + x / 8;
        const int v = (patch == 5 || patch == 6) ? (x * 13 + y * 7 + c * 50 + variant * 90) % 256
                                                 : (x * 5 + y * 11 + c * 30) % 256;
        img->rgb[static_cast<std::size_t>((y * 32 + x) * 3 + c)] = static_cast<std::uint8_t>(v);
      }
  return img;
}

struct planner_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  planner_fixture() : out(std::make_shared<recorded>()) {
    const auto grid = *patch_grid::make(32, 8);
    gate_thresholds gate;
    gate.mad = 3.0f;
    std::vector<hasher_actor> hashers;
    for (int i = 0; i < 2; ++i)
      hashers.push_back(sys.spawn(hasher, std::make_shared<const signature_engine>(*signature_engine::make(grid))));
    std::vector<cache_shard_actor> shards{sys.spawn(cache_shard, *reference_gate::make(grid, gate), 0, 8),
                                          sys.spawn(cache_shard, *reference_gate::make(grid, gate), 8, 16)};
    encoder = sys.spawn(recording_encoder, out);
    source = sys.spawn(recording_source, out);
    planner = sys.spawn(frame_planner, planner_settings{"cam", 0, drift_config{}, {}}, hashers, shards, encoder);
    sched.run();
  }
  ~planner_fixture() override {
    for (const auto& a : {caf::actor_cast<caf::actor>(planner), caf::actor_cast<caf::actor>(encoder),
                          caf::actor_cast<caf::actor>(source)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }
  void send_frame(std::uint64_t seq, std::shared_ptr<const preprocessed_image> img) {
    frame_job job;
    job.tag = frame_tag{0, "cam", seq, 0.0};
    job.source = source;
    job.image = std::move(img);
    caf::anon_send(planner, std::move(job));
  }
  std::shared_ptr<recorded> out;
  encoder_actor encoder;
  credit_actor source;
  planner_actor planner;
};

TEST_F(planner_fixture, frames_reach_the_encoder_in_order_with_their_plans) {
  send_frame(0, image(1));
  send_frame(1, image(1));
  send_frame(2, image(2));
  sched.run();
  ASSERT_EQ(out->encoded.size(), 3u);
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_EQ(out->encoded[i].tag.seq, i);
  EXPECT_TRUE(out->encoded[0].plan->full) << "a stream's first frame";
  EXPECT_TRUE(out->encoded[1].plan->positions.empty()) << "an unchanged frame costs nothing";
  EXPECT_EQ(out->encoded[2].plan->positions, (std::vector<int>{5, 6})) << "only the repainted patches";
  EXPECT_TRUE(out->done.empty());
}

TEST_F(planner_fixture, a_frame_that_cannot_be_hashed_fails_back_to_its_source_and_the_next_go_on) {
  send_frame(0, nullptr);  // the hasher refuses a frame without an image
  send_frame(1, image(1));
  send_frame(2, image(1));
  sched.run();
  ASSERT_EQ(out->done.size(), 1u);
  EXPECT_EQ(out->done[0].first, 0u);
  EXPECT_EQ(out->done[0].second, frame_outcome::failed);
  ASSERT_EQ(out->encoded.size(), 2u);
  EXPECT_EQ(out->encoded[0].tag.seq, 1u);
  EXPECT_TRUE(out->encoded[0].plan->full);
  EXPECT_EQ(out->encoded[1].tag.seq, 2u);
  EXPECT_TRUE(out->encoded[1].plan->positions.empty());
}

TEST_F(planner_fixture, a_refresh_makes_the_next_plan_recompute_every_token) {
  send_frame(0, image(1));
  sched.run();
  caf::anon_send(planner, refresh_atom::value, std::uint64_t{0});  // the encoder lost frame 0
  send_frame(1, image(1));
  sched.run();
  ASSERT_EQ(out->encoded.size(), 2u);
  EXPECT_EQ(out->encoded[1].plan->positions.size(), 16u) << "the references were dropped";
  bool answered = false;
  auto p = planner;
  sys.spawn([&answered, p](caf::event_based_actor* self) {
    self->request(p, caf::infinite, stats_atom::value).then([&answered](const planner_counters&) { answered = true; });
  });
  sched.run();
  EXPECT_TRUE(answered) << "the planner answers its stats contract";
}

}  // namespace
}  // namespace vlcache::actors
