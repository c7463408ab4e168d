// The encoder actor with the tiny CLIP fixture under CAF's deterministic
// scheduler, a recording delivery and source: a full frame gives the full
// forward's tokens, an unchanged frame computes nothing and gives the same
// tokens, frames wait for a batch's worth of tokens (a second frame of a
// waiting stream runs the batch first), and a frame the model cannot take
// is lost back to its source, with the stream's sparse frames after it,
// until a full one comes.

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/encoder_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

const std::string model = std::string(VLCACHE_FIXTURES) + "/clip_tiny/standalone";

struct recorded {
  std::vector<encoded_frame> delivered;
  std::vector<std::pair<std::uint64_t, frame_outcome>> done;
};

delivery_actor::behavior_type recording_delivery(std::shared_ptr<recorded> out) {
  return {
      [out](const encoded_frame& f) { out->delivered.push_back(f); },
      [](end_stream_atom, stream_id) {},
      [](stats_atom) { return latency_report{}; },
  };
}

credit_actor::behavior_type recording_source(std::shared_ptr<recorded> out) {
  return {
      [out](done_atom, std::uint64_t seq, frame_outcome o) { out->done.emplace_back(seq, o); },
      [](refresh_atom, std::uint64_t) {},
  };
}

/// A 32x32 input (CHW, 3 channels) seeded by `variant`; `values` changes its size.
std::shared_ptr<const preprocessed_image> input(int variant, std::size_t values = 3 * 32 * 32) {
  auto img = std::make_shared<preprocessed_image>();
  img->size = 32;
  img->pixels.resize(values);
  for (std::size_t i = 0; i < values; ++i)
    img->pixels[i] = 0.01f * static_cast<float>((i * 31 + static_cast<std::size_t>(variant) * 17) % 200) - 1.0f;
  return img;
}

struct encoder_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  void start(int batch_tokens) {
    auto loaded = vision_encoder::load(model, encoder_options{});
    ASSERT_TRUE(loaded) << loaded.err().message;
    reference = std::move(*loaded);
    auto again = vision_encoder::load(model, encoder_options{});
    ASSERT_TRUE(again);
    encoder_backend backend;
    backend.local = std::move(*again);
    encoder_settings settings;
    settings.batch_tokens = batch_tokens;
    source = sys.spawn(recording_source, out);
    delivery = sys.spawn(recording_delivery, out);
    encoder = sys.spawn(actors::encoder, backend, settings, delivery);
    sched.run();
  }
  ~encoder_fixture() override {
    for (const auto& a : {caf::actor_cast<caf::actor>(encoder), caf::actor_cast<caf::actor>(delivery),
                          caf::actor_cast<caf::actor>(source)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }
  void send(stream_id stream, std::uint64_t seq, std::shared_ptr<const preprocessed_image> img,
            std::optional<std::vector<int>> positions) {
    frame_job job;
    job.tag = frame_tag{stream, "cam" + std::to_string(stream), seq, 0.0};
    job.source = source;
    job.image = std::move(img);
    compute_plan plan;
    plan.full = !positions;
    if (positions) plan.positions = *positions;
    else
      for (int p = 0; p < 16; ++p) plan.positions.push_back(p);
    job.plan = std::make_shared<const compute_plan>(plan);
    caf::anon_send(encoder, std::move(job));
    sched.run();
  }
  encoder_counters counters() {
    encoder_counters c;
    auto e = encoder;
    sys.spawn([&c, e](caf::event_based_actor* self) {
      self->request(e, caf::infinite, stats_atom::value).then([&c](const encoder_counters& r) { c = r; });
    });
    sched.run();
    return c;
  }
  static float max_diff(const tensor_handle& a, const tensor_handle& b) {
    EXPECT_EQ(a.shape(), b.shape());
    float m = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
    return m;
  }
  std::shared_ptr<recorded> out = std::make_shared<recorded>();
  std::unique_ptr<vision_encoder> reference;
  credit_actor source;
  delivery_actor delivery;
  encoder_actor encoder;
};

TEST_F(encoder_fixture, a_full_frame_is_the_full_forward_and_an_unchanged_frame_costs_nothing) {
  start(1);  // every frame its own batch
  const auto a = input(1);
  send(0, 0, a, std::nullopt);
  send(0, 1, a, std::vector<int>{});
  sched.trigger_timeouts();  // a frame of no tokens waits for company until the batch timeout
  sched.run();
  ASSERT_EQ(out->delivered.size(), 2u);
  auto full = reference->encode_full({a->pixels.data()});
  ASSERT_TRUE(full) << full.err().message;
  EXPECT_LT(max_diff(out->delivered[0].features, (*full)[0].features), 1e-5f);
  EXPECT_TRUE(out->delivered[0].full);
  EXPECT_EQ(out->delivered[1].computed, 0);
  EXPECT_LT(max_diff(out->delivered[1].features, out->delivered[0].features), 1e-6f) << "tokens from the store";
  const auto c = counters();
  EXPECT_EQ(c.frames, 2u);
  EXPECT_EQ(c.tokens, 16u) << "only the first frame's 16 tokens were computed";
  EXPECT_TRUE(out->done.empty());
}

TEST_F(encoder_fixture, frames_wait_for_a_batch_and_a_streams_second_frame_runs_the_first) {
  start(48);  // three full frames' worth
  send(0, 0, input(1), std::nullopt);
  send(1, 0, input(2), std::nullopt);
  EXPECT_TRUE(out->delivered.empty()) << "32 tokens wait for 48 (or the timeout)";
  send(0, 1, input(1), std::vector<int>{3});
  EXPECT_EQ(out->delivered.size(), 2u) << "stream 0's second frame ran the waiting batch first";
  send(2, 0, input(3), std::nullopt);
  send(3, 0, input(4), std::nullopt);
  EXPECT_EQ(out->delivered.size(), 2u) << "33 tokens wait";
  send(4, 0, input(5), std::nullopt);
  EXPECT_EQ(out->delivered.size(), 6u) << "49 tokens waiting: a batch";
  EXPECT_EQ(counters().batches, 2u);
}

TEST_F(encoder_fixture, a_frame_the_model_cannot_take_is_lost_and_its_stream_waits_for_a_full_frame) {
  start(1);
  send(0, 0, input(1), std::nullopt);
  send(0, 1, input(1, 100), std::vector<int>{2});  // another preprocessing's size
  send(0, 2, input(1), std::vector<int>{2});       // planned before the source heard
  send(0, 3, input(1), std::nullopt);              // the source's full frame
  ASSERT_EQ(out->done.size(), 2u);
  EXPECT_EQ(out->done[0], std::make_pair(std::uint64_t{1}, frame_outcome::lost));
  EXPECT_EQ(out->done[1], std::make_pair(std::uint64_t{2}, frame_outcome::lost));
  ASSERT_EQ(out->delivered.size(), 2u);
  EXPECT_EQ(out->delivered[1].job.tag.seq, 3u);
  EXPECT_TRUE(out->delivered[1].full);
}

}  // namespace
}  // namespace vlcache::actors
