// A cache shard under CAF's deterministic scheduler: it judges only its band
// of positions, moves no reference when it judges, records references when
// a plan is committed, forgets them when invalidated or when the stream
// ends, and refuses a frame without signatures by name.

#include <gtest/gtest.h>

#include <optional>
#include <variant>

#include <caf/all.hpp>

#include "actors/actor_error.hpp"
#include "actors/cache_shard_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

/// A 32x32 frame (4x4 patches of 8 px); `variant` repaints every patch.
std::shared_ptr<const frame_signatures> signatures_of(int variant) {
  std::vector<std::uint8_t> rgb(32 * 32 * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>((i * 7 + variant * 101) % 256);
  const auto engine = *signature_engine::make(*patch_grid::make(32, 8));
  return std::make_shared<const frame_signatures>(
      *engine.compute(image_view{rgb.data(), 32, 32, 3, 1, 0, channel_order::rgb}));
}

struct shard_fixture : ::testing::Test, vlcache::testing::deterministic_system {
  shard_fixture() {
    gate_thresholds gate;
    gate.mad = 3.0f;
    shard = sys.spawn(cache_shard, *reference_gate::make(*patch_grid::make(32, 8), gate), 4, 12);
    sched.run();
  }
  ~shard_fixture() override {
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
    sched.run();
  }
  /// The shard's verdict on frame `seq` of stream 0, or its error's text.
  std::variant<gate_decision, std::string> decide(std::uint64_t seq, std::shared_ptr<const frame_signatures> sigs) {
    frame_job job;
    job.tag = frame_tag{0, "cam", seq, 0.0};
    job.signatures = std::move(sigs);
    std::variant<gate_decision, std::string> out = std::string("no reply");
    auto s = shard;
    sys.spawn([&out, s, job](caf::event_based_actor* self) {
      self->request(s, caf::infinite, decide_atom::value, job)
          .then([&out](const shard_decision& d) { out = *d.decision; },
                [&out, self](const caf::error& e) { out = error_text(self->system(), e); });
    });
    sched.run();
    return out;
  }
  static std::vector<int> positions(int first, int last) {
    std::vector<int> p;
    for (int i = first; i < last; ++i) p.push_back(i);
    return p;
  }
  cache_shard_actor shard;
};

TEST_F(shard_fixture, judges_its_band_and_moves_references_only_on_commit) {
  const auto frame = signatures_of(1);
  auto first = std::get<gate_decision>(decide(0, frame));
  EXPECT_EQ(first.miss_positions, positions(4, 12)) << "no references yet: its band misses, nothing else";
  auto again = std::get<gate_decision>(decide(1, frame));
  EXPECT_EQ(again.misses(), 8) << "judging moved no reference";

  caf::anon_send(shard, commit_positions{0, 1, frame, std::make_shared<const std::vector<int>>(positions(0, 16))});
  sched.run();
  EXPECT_EQ(std::get<gate_decision>(decide(2, frame)).misses(), 0) << "the committed frame's own signatures hit";
  EXPECT_EQ(std::get<gate_decision>(decide(3, signatures_of(2))).miss_positions, positions(4, 12))
      << "a repainted frame misses in the band";

  caf::anon_send(shard, invalidate_positions{0, std::make_shared<const std::vector<int>>(std::vector<int>{5, 6})});
  sched.run();
  EXPECT_EQ(std::get<gate_decision>(decide(4, frame)).miss_positions, (std::vector<int>{5, 6}));

  caf::anon_send(shard, end_stream_atom::value, stream_id{0});
  sched.run();
  EXPECT_EQ(std::get<gate_decision>(decide(5, frame)).misses(), 8) << "the ended stream's references are gone";
}

TEST_F(shard_fixture, a_frame_without_signatures_is_refused_by_name_and_the_shard_goes_on) {
  auto refused = decide(7, nullptr);
  ASSERT_TRUE(std::holds_alternative<std::string>(refused));
  EXPECT_NE(std::get<std::string>(refused).find("frame 7 has no signatures"), std::string::npos)
      << std::get<std::string>(refused);
  EXPECT_TRUE(std::holds_alternative<gate_decision>(decide(8, signatures_of(1))));
}

}  // namespace
}  // namespace vlcache::actors
