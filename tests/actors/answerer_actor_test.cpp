// The answerer actor under CAF's deterministic scheduler: more streams wait
// than one batch takes, and every answer still names its stream and carries
// that stream's image tokens, oldest first.

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/answerer_actor.hpp"
#include "support/actor_system_config.hpp"

namespace vlcache::actors {
namespace {

const std::string fixtures = VLCACHE_FIXTURES;

/// Collects what reaches a sink.
struct collected {
  std::vector<answer_record> answers;
};

/// The sink contract, keeping the answers (frame lines are not expected here).
sink_actor::behavior_type collecting_sink(std::shared_ptr<collected> out) {
  return {[](const frame_record&) {}, [out](const answer_record& r) { out->answers.push_back(r); }};
}

answer_job job_for(stream_id stream, int tokens, int width, int ms_ago) {
  std::vector<float> f(static_cast<std::size_t>(tokens) * width);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.01f * static_cast<float>((i * 7 + stream * 13) % 97) - 0.4f;
  answer_job j;
  j.tag = frame_tag{stream, "cam" + std::to_string(stream), 10 + stream, 0.0};
  j.features = tensor_handle::from_floats(f.data(), {tokens, width});
  j.read_at = steady::now() - std::chrono::milliseconds(ms_ago);
  return j;
}

/// The actor's counters, asked the way the probe asks; then both actors stop.
std::optional<answerer_counters> counters_then_stop(caf::actor_system& sys, caf::scheduler::test_coordinator& sched,
                                                    const answerer_stats_actor& a, const sink_actor& sink) {
  std::optional<answerer_counters> out;
  sys.spawn([&](caf::event_based_actor* self) {
    self->request(a, caf::infinite, stats_atom::value).then([&](const answerer_counters& c) { out = c; });
  });
  sched.run();
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  sched.run();
  return out;
}

/// The fixture model's answerer, shared with an answerer actor (spawned by
/// start()) whose answers reach a collecting sink.
struct answerer_env : vlcache::testing::deterministic_system {
  answerer_env() {
    auto loaded = answerer::load(fixtures + "/llama_tiny/llava_new", "", llm_options{}, answer_options{});
    if (!loaded) throw std::runtime_error(loaded.err().message);
    llm = std::move(*loaded);
    width = llm->model().config().hidden_size;
  }
  void start(int max_batch, int audit_every = 0, int max_on_demand = 16) {
    sink = sys.spawn(collecting_sink, out);
    actor = sys.spawn(llm_answerer, llm, answerer_settings{"What is in the image?", max_on_demand, max_batch, audit_every},
                      std::vector<sink_actor>{sink});
    sched.run();
  }
  /// Sends to the actor and runs until every actor is idle.
  template <class... Ts>
  void deliver(Ts&&... xs) {
    caf::anon_send(actor, std::forward<Ts>(xs)...);
    sched.run();
  }
  std::optional<answerer_counters> counters_then_stop() {
    return vlcache::actors::counters_then_stop(sys, sched, actor, sink);
  }
  std::shared_ptr<answerer> llm;
  int width = 0;
  std::shared_ptr<collected> out = std::make_shared<collected>();
  sink_actor sink;
  answerer_actor actor;
};

TEST(answerer_actor, more_streams_than_max_batch_are_all_answered_with_their_images) {
  answerer_env env;
  env.start(2);
    // Six streams wait at once (the actor runs nothing until sched.run()); the
  // oldest frame belongs to stream 6, the newest to stream 1.
  const int streams = 6, tokens = 16;
  for (int s = 1; s <= streams; ++s) caf::anon_send(env.actor, job_for(static_cast<stream_id>(s), tokens, env.width, 100 * s));
  env.sched.run();

  ASSERT_EQ(env.out->answers.size(), static_cast<std::size_t>(streams));
  std::vector<stream_id> order;
  for (const auto& r : env.out->answers) {
    EXPECT_EQ(r.tag.stream_name, "cam" + std::to_string(r.tag.stream));
    EXPECT_EQ(r.tag.seq, 10 + r.tag.stream);
    EXPECT_EQ(r.result.image_tokens, tokens) << "stream " << r.tag.stream << " answered without its image";
    EXPECT_LE(r.result.batch, 2);
    order.push_back(r.tag.stream);
  }
  EXPECT_EQ(order, (std::vector<stream_id>{6, 5, 4, 3, 2, 1})) << "oldest first";
  // Nothing is left waiting.
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pending, 0u);
  EXPECT_EQ(c->answered, static_cast<std::uint64_t>(streams));
  EXPECT_EQ(c->failed, 0u);
}

TEST(answerer_actor, answers_with_a_known_truth_are_scored_and_others_are_not) {
  answerer_env env;
    const std::string question = "How many red shapes are there?";
  // What this model says to the question about these tokens: the truth for
  // one stream, a different string for the other.
  auto reference = job_for(1, 16, env.width, 0);
  auto said = env.llm->ask(99, reference.features, question);
  ASSERT_TRUE(said) << said.err().message;
  env.start(1);
  for (stream_id s : {1, 2, 3}) {
    auto j = job_for(1, 16, env.width, 10 * static_cast<int>(s));
    j.tag.stream = s;
    j.tag.stream_name = "cam" + std::to_string(s);
    if (s != 3) {
      j.question = question;
      j.known = std::make_shared<const scene_question>(
          scene_question{"count_color", question, s == 1 ? said->text : said->text + " more"});
    }
    caf::anon_send(env.actor, std::move(j));
  }
  env.sched.run();
  ASSERT_EQ(env.out->answers.size(), 3u);
  for (const auto& r : env.out->answers) {
    if (r.tag.stream == 3) {
      EXPECT_FALSE(r.known);
      EXPECT_EQ(r.result.question, "What is in the image?");
      continue;
    }
    ASSERT_TRUE(r.known);
    EXPECT_EQ(r.result.question, question);
    EXPECT_EQ(r.result.text, said->text) << "the same tokens and question give the same answer";
    EXPECT_EQ(r.correct(), r.tag.stream == 1);
  }
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->answered, 3u);
  EXPECT_EQ(c->with_truth, 2u);
  EXPECT_EQ(c->correct, 1u);
}

// On-demand questions beyond the bound are refused as busy (the HTTP API's
// 429), the others answered; a question with its own controls is streamed
// piece by piece; an answer marked unpublished reaches its asker alone.
TEST(answerer_actor, questions_over_the_bound_are_busy_and_controls_stream_unpublished_answers) {
  answerer_env env;
  env.start(1, 0, 1);
  auto pieces = std::make_shared<std::vector<std::string>>();
  auto controls = std::make_shared<ask_controls>();
  controls->sampling = sampling_options{};
  controls->sampling->max_new_tokens = 5;
  controls->on_text = [pieces](const std::string& p) {
    pieces->push_back(p);
    return true;
  };
  std::vector<std::optional<expected<answer_record>>> replies(3);
  env.sys.spawn([&](caf::event_based_actor* self) {
    for (std::size_t i = 0; i < replies.size(); ++i) {
      auto j = job_for(1, 16, env.width, 0);
      j.question = "What is in the image?";
      j.controls = controls;
      j.publish = false;
      self->request(env.actor, caf::infinite, ask_atom::value, std::move(j))
          .then([&replies, i](const answer_record& r) { replies[i] = r; },
                [&replies, i](const caf::error& e) {
                  replies[i] = error{e.code() == static_cast<std::uint8_t>(errc::busy) + 1 ? errc::busy : errc::io_error,
                                     "refused"};
                });
    }
  });
  env.sched.run();
  ASSERT_TRUE(replies[0] && *replies[0]) << "the first question is answered";
  for (std::size_t i = 1; i < replies.size(); ++i) {
    ASSERT_TRUE(replies[i]);
    ASSERT_FALSE(*replies[i]) << "question " << i << " was not refused";
    EXPECT_EQ(replies[i]->err().code, errc::busy);
  }
  const answer& a = (*replies[0])->result;
  std::string streamed;
  for (const auto& p : *pieces) streamed += p;
  EXPECT_EQ(streamed, a.text) << "the pieces make the answer";
  EXPECT_EQ(pieces->empty(), a.text.empty());
  EXPECT_LE(a.ids.size(), 5u) << "the question's own max_new_tokens";
  EXPECT_TRUE(env.out->answers.empty()) << "an unpublished answer reached a sink";
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->answered, 1u);
  EXPECT_TRUE(c->per_stream.empty());
}

// keep_kv_current: a frame between answers brings the stream's image K/V up
// to date when nothing else waits, so the next answer prefills its question
// and little more; an update older than an answer of its stream is dropped.
TEST(answerer_actor, kv_updates_run_when_no_answer_waits_and_shorten_the_next_prefill) {
  answerer_env env;
  env.start(4);
    const int first = env.llm->options().reuse.recompute_first;
  // Stream 1: answered, then a different frame arrives as an update, then
  // the same frame is due an answer.
  auto older = job_for(1, 16, env.width, 30);
  env.deliver(older);
  auto newer = job_for(2, 16, env.width, 20);  // stream 2's pixels as stream 1's next frame
  newer.tag = older.tag;
  newer.tag.seq = older.tag.seq + 1;
  env.deliver(kv_update_atom::value, newer);
  auto due = newer;
  due.tag.seq += 1;
  env.deliver(due);
  ASSERT_EQ(env.out->answers.size(), 2u);
  const auto& r = env.out->answers[1].result;
  EXPECT_FALSE(r.full_prefill);
  EXPECT_EQ(r.image_recomputed, first) << "the update had brought the other image rows";
  // Stream 3: an update waits while an answer about a later frame arrives;
  // the answer goes first and the update is dropped.
  auto stale = job_for(3, 16, env.width, 10);
  caf::anon_send(env.actor, kv_update_atom::value, stale);
  auto later = stale;
  later.tag.seq += 1;
  env.deliver(later);
  ASSERT_EQ(env.out->answers.size(), 3u);
  EXPECT_EQ(env.out->answers[2].tag.stream, 3u);
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kv_updates, 1u);
  EXPECT_EQ(c->kv_updates_dropped, 1u);
  EXPECT_EQ(c->kv_updates_failed, 0u);
  EXPECT_EQ(c->kv_update_ms.count(), 1u);
  EXPECT_EQ(c->pending, 0u);
}

}  // namespace
}  // namespace vlcache::actors

namespace vlcache::actors {
namespace {

/// What the encoder side of audits saw.
struct audit_log {
  std::vector<stream_id> requested;
  std::vector<std::pair<stream_id, bool>> outcomes;
};

/// The encoder's audit interface: the full forward is `full_of(cached)`,
/// or an error when `refuse`.
auditor_actor::behavior_type fake_auditor(std::shared_ptr<audit_log> log, bool refuse, float scale) {
  return {
      [log, refuse, scale](full_atom, const full_request& r) -> caf::result<full_reply> {
        log->requested.push_back(r.stream);
        if (refuse) return caf::make_error(caf::sec::runtime_error, "no full forward");
        auto v = r.cached.to_vector();
        for (auto& x : v) x *= scale;
        return full_reply{tensor_handle::from_floats(v.data(), r.cached.shape())};
      },
      [log](audit_atom, stream_id stream, bool agreed) { log->outcomes.emplace_back(stream, agreed); },
  };
}

answer_job audited_job(stream_id stream, std::uint64_t seq, int width) {
  auto j = job_for(stream, 16, width, 10);
  j.tag.seq = seq;
  j.image = std::make_shared<preprocessed_image>();
  return j;
}

TEST(answerer_actor, every_nth_answer_is_answered_again_from_the_full_forward_and_the_outcome_goes_back) {
  answerer_env env;
  env.start(4, 2);
  auto log = std::make_shared<audit_log>();
  auto auditor = env.sys.spawn(fake_auditor, log, false, 1.0f);  // the full forward equals the cached tokens
  env.deliver(auditor_atom::value, auditor);
  for (std::uint64_t seq = 1; seq <= 4; ++seq) env.deliver(audited_job(1, seq, env.width));
  ASSERT_EQ(env.out->answers.size(), 4u);
  EXPECT_EQ(log->requested, (std::vector<stream_id>{1, 1})) << "the 2nd and 4th answers";
  ASSERT_EQ(log->outcomes.size(), 2u);
  EXPECT_TRUE(log->outcomes[0].second) << "the same tokens give the same answer";
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->audits, 2u);
  EXPECT_EQ(c->audits_agreed, 2u);
  EXPECT_EQ(c->answered, 4u) << "an audit is not an answer";
  EXPECT_GT(c->audit_seconds, 0.0);
  caf::anon_send_exit(auditor, caf::exit_reason::user_shutdown);
  env.sched.run();
}

TEST(answerer_actor, an_audit_the_encoder_cannot_run_is_skipped_and_counted) {
  answerer_env env;
  env.start(4, 1);
  auto log = std::make_shared<audit_log>();
  auto auditor = env.sys.spawn(fake_auditor, log, true, 1.0f);
  env.deliver(auditor_atom::value, auditor);
  env.deliver(audited_job(3, 1, env.width));
  env.deliver(audited_job(3, 2, env.width));
  EXPECT_EQ(log->requested.size(), 2u);
  EXPECT_TRUE(log->outcomes.empty()) << "no outcome without a full answer";
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->audits, 0u);
  EXPECT_EQ(c->audits_skipped, 2u);
  EXPECT_EQ(c->answered, 2u);
  caf::anon_send_exit(auditor, caf::exit_reason::user_shutdown);
  env.sched.run();
}

TEST(answerer_actor, without_an_auditor_no_audit_is_kept) {
  answerer_env env;
  env.start(4, 1);
  env.deliver(audited_job(2, 1, env.width));
  auto c = env.counters_then_stop();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->audits + c->audits_skipped, 0u);
}

}  // namespace
}  // namespace vlcache::actors
