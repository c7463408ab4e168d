#include "actors/answerer_actor.hpp"
#include "core/base/elapsed.hpp"

#include <caf/all.hpp>
#include <algorithm>

#include "actors/actor_error.hpp"

namespace vlcache::actors {
namespace {

std::vector<expected<answer_record>> run_batch(answerer_state& s, const std::vector<answer_job>& jobs) {
  std::vector<answerer::question_about> batch;
  for (const auto& job : jobs)
    batch.push_back({job.tag.stream, job.features, job.question.empty() ? s.settings.question : job.question});
  std::vector<expected<answer>> answers;
  if (jobs.size() == 1 && jobs[0].controls)  // a question with its own controls is answered alone
    answers.push_back(s.llm->ask(batch[0].stream, batch[0].features, batch[0].question, *jobs[0].controls));
  else
    answers = s.llm->ask_batch(batch);
  std::vector<expected<answer_record>> out;
  const auto now = steady::now();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!answers[i]) {
      out.emplace_back(error{answers[i].err().code, jobs[i].tag.stream_name + " frame " +
                                                        std::to_string(jobs[i].tag.seq) + ": " + answers[i].err().message});
      continue;
    }
    answer_record r;
    r.tag = jobs[i].tag;
    r.result = std::move(*answers[i]);
    r.encode_ms = jobs[i].encode_ms;
    r.total_ms = ms_between(jobs[i].read_at, now);
    r.kv_bytes = s.llm->kv_bytes(jobs[i].tag.stream);
    r.known = jobs[i].known;
    r.published = jobs[i].publish;
    r.changed_share = jobs[i].changed_share;
    out.emplace_back(std::move(r));
  }
  return out;
}

void account(answerer_state& s, const answer_record& r) {
  ++s.counters.answered;
  s.counters.on_demand += r.on_demand;
  s.counters.prefill_ms.add(r.result.prefill_ms);
  s.counters.decode_ms.add(r.result.decode_ms);
  s.counters.total_ms.add(r.total_ms);
  if (r.published) ++s.counters.per_stream[r.tag.stream_name];
  s.counters.with_truth += r.known != nullptr;
  s.counters.correct += r.correct();
  if (r.known) {
    auto& [asked, right] = s.counters.per_kind[r.known->kind];
    ++asked;
    right += r.correct();
  }
}

/// An answer about a stream's frame makes a waiting K/V update of an older
/// frame of it pointless: the answer's prefill brought the K/V further.
void drop_updates_before(answerer_state& s, const frame_tag& answered) {
  auto it = s.kv_updates.find(answered.stream);
  if (it == s.kv_updates.end() || it->second.tag.seq > answered.seq) return;
  s.kv_updates.erase(it);
  ++s.counters.kv_updates_dropped;
}

/// The streams whose K/V update waits longest, up to `most`, taken out.
std::vector<answer_job> oldest_updates(answerer_state& s, int most) {
  std::vector<std::pair<steady::time_point, stream_id>> oldest;
  for (const auto& [stream, job] : s.kv_updates) oldest.emplace_back(job.read_at, stream);
  std::sort(oldest.begin(), oldest.end());
  if (static_cast<int>(oldest.size()) > most) oldest.resize(static_cast<std::size_t>(most));
  std::vector<answer_job> jobs;
  for (const auto& [read_at, stream] : oldest) {
    auto it = s.kv_updates.find(stream);
    jobs.push_back(std::move(it->second));
    s.kv_updates.erase(it);
  }
  return jobs;
}

void run_updates(answerer_state& s, const std::vector<answer_job>& jobs) {
  std::vector<answerer::frame_of> frames;
  for (const auto& job : jobs) frames.push_back({job.tag.stream, job.features});
  auto done = s.llm->update_batch(frames);
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (done[i]) {
      ++s.counters.kv_updates;
      s.counters.kv_update_ms.add(done[i]->ms);
    } else {
      ++s.counters.kv_updates_failed;
      s.counters.last_error = jobs[i].tag.stream_name + " frame " + std::to_string(jobs[i].tag.seq) +
                              ": K/V update: " + done[i].err().message;
    }
  }
}

using answerer_self = answerer_actor::stateful_pointer<answerer_state>;

void schedule(answerer_self self);

/// Every audit_every-th answer of a stream is kept to be audited (the
/// latest per stream: an older one not yet run is given up, counted).
void note_for_audit(answerer_state& s, const answer_job& job, const answer_record& r) {
  if (s.settings.audit_every <= 0 || !s.auditor || !job.image) return;
  if (++s.answers_of[job.tag.stream] % static_cast<std::uint64_t>(s.settings.audit_every) != 0) return;
  auto [it, fresh] = s.audits.try_emplace(job.tag.stream);
  if (!fresh) ++s.counters.audits_skipped;
  it->second = {job, job.question.empty() ? s.settings.question : job.question, r.result.text, {}};
}

/// The stream id an audit's full answer prefills under: never a camera's,
/// so the camera's reused K/V stay as they are.
stream_id audit_stream(stream_id stream) { return stream | 0x80000000u; }

/// An audit whose full forward came back: the same question answered from
/// it, with a full prefill, against what the cached path answered.
void run_audit(answerer_self self, pending_audit a) {
  auto& s = self->state;
  const auto started = steady::now();
  const auto id = audit_stream(a.job.tag.stream);
  auto full = s.llm->ask(id, a.full, a.question);
  s.llm->end_stream(id);
  s.counters.audit_seconds += seconds_since(started);
  if (!full) {
    ++s.counters.audits_skipped;
    s.counters.last_error = a.job.tag.stream_name + " frame " + std::to_string(a.job.tag.seq) +
                            ": audit: " + full.err().message;
    return;
  }
  const bool agreed = full->text == a.cached_text;
  ++s.counters.audits;
  s.counters.audits_agreed += agreed;
  self->send(s.auditor, audit_atom::value, a.job.tag.stream, agreed);
}

/// Asks the encoder for the full forward of one waiting audit's frame; the
/// reply comes back as a ready audit, run when nothing else waits.
void request_full(answerer_self self) {
  auto& s = self->state;
  auto it = s.audits.begin();
  for (auto j = s.audits.begin(); j != s.audits.end(); ++j)
    if (j->second.full.empty() && (!it->second.full.empty() || j->second.job.read_at < it->second.job.read_at))
      it = j;
  if (!it->second.full.empty()) return;
  s.auditing = true;
  const stream_id stream = it->first;  // the request below names it
  const auto seq = it->second.job.tag.seq;
  self->request(s.auditor, std::chrono::seconds(30), full_atom::value, full_request{stream, it->second.job.image, it->second.job.features})
      .then(
          [self, stream, seq](const full_reply& r) {
            auto& st = self->state;
            st.auditing = false;
            auto a = st.audits.find(stream);
            if (a != st.audits.end() && a->second.job.tag.seq == seq) a->second.full = r.features;
            schedule(self);
          },
          [self, stream, seq](const caf::error&) {
            auto& st = self->state;
            st.auditing = false;
            auto a = st.audits.find(stream);
            if (a != st.audits.end() && a->second.job.tag.seq == seq) {
              st.audits.erase(a);
              ++st.counters.audits_skipped;  // the encoder could not run it in full
            }
            schedule(self);
          });
}

bool audit_ready(const answerer_state& s) {
  return std::any_of(s.audits.begin(), s.audits.end(), [](const auto& a) { return !a.second.full.empty(); });
}
bool audit_to_request(const answerer_state& s) {
  return !s.auditing &&
         std::any_of(s.audits.begin(), s.audits.end(), [](const auto& a) { return a.second.full.empty(); });
}

void schedule(answerer_self self) {
  auto& s = self->state;
  if (s.scheduled || (s.pending.empty() && s.on_demand.empty() && s.kv_updates.empty() && !audit_ready(s) &&
                      !audit_to_request(s)))
    return;
  s.scheduled = true;
  self->send(self, work_atom::value);
}

}  // namespace

answerer_actor::behavior_type llm_answerer(answerer_self self, std::shared_ptr<answerer> llm,
                                           answerer_settings settings, std::vector<sink_actor> sinks) {
  self->state.llm = std::move(llm);
  self->state.settings = std::move(settings);
  self->state.sinks = std::move(sinks);
  return {
      [self](answer_job& job) {
        auto& s = self->state;
        auto [it, fresh] = s.pending.try_emplace(job.tag.stream);
        if (!fresh) ++s.counters.superseded;
        it->second = std::move(job);
        schedule(self);
      },
      [self](kv_update_atom, answer_job& job) {
        auto& s = self->state;
        auto [it, fresh] = s.kv_updates.try_emplace(job.tag.stream);
        if (!fresh) ++s.counters.kv_updates_dropped;
        it->second = std::move(job);
        schedule(self);
      },
      [self](ask_atom, answer_job& job) -> caf::result<answer_record> {
        auto& s = self->state;
        if (static_cast<int>(s.on_demand.size()) >= s.settings.max_on_demand)
          return to_caf_error({errc::busy, "the answerer has " + std::to_string(s.on_demand.size()) +
                                                   " questions waiting; ask again later"});
        auto rp = self->make_response_promise<answer_record>();
        s.on_demand.emplace_back(std::move(job), rp);
        schedule(self);
        return rp;
      },
      [self](work_atom) {
        auto& s = self->state;
        s.scheduled = false;
        // Questions asked by a person go first; then the stream waiting
        // longest; K/V updates only when no answer waits.
        if (!s.on_demand.empty()) {
          auto [job, rp] = std::move(s.on_demand.front());
          s.on_demand.pop_front();
          const auto started = steady::now();
          auto r = std::move(run_batch(s, {job})[0]);
          s.counters.answer_seconds += seconds_since(started);
          drop_updates_before(s, job.tag);
          if (r) {
            r->on_demand = true;
            account(s, *r);
            if (r->published)
              for (const auto& sink : s.sinks) self->send(sink, *r);
            rp.deliver(*r);
          } else {
            ++s.counters.failed;
            s.counters.last_error = r.err().message;
            rp.deliver(to_caf_error(r.err()));
          }
        } else if (!s.pending.empty()) {
          // The streams waiting longest, up to max_batch of them, in one pass.
          // Choose before moving anything: the streams left waiting keep their jobs intact.
          std::vector<std::pair<steady::time_point, stream_id>> oldest;
          for (const auto& [stream, job] : s.pending) oldest.emplace_back(job.read_at, stream);
          std::sort(oldest.begin(), oldest.end());
          if (static_cast<int>(oldest.size()) > s.settings.max_batch)
            oldest.resize(static_cast<std::size_t>(s.settings.max_batch));
          std::vector<answer_job> jobs;
          for (const auto& [read_at, stream] : oldest) {
            auto it = s.pending.find(stream);
            jobs.push_back(std::move(it->second));
            s.pending.erase(it);
          }
          for (const auto& job : jobs) drop_updates_before(s, job.tag);
          const auto started = steady::now();
          auto records = run_batch(s, jobs);
          s.counters.answer_seconds += seconds_since(started);
          for (std::size_t i = 0; i < records.size(); ++i) {
            auto& r = records[i];
            if (r) {
              account(s, *r);
              note_for_audit(s, jobs[i], *r);
              for (const auto& sink : s.sinks) self->send(sink, *r);
            } else {
              // This frame's answer fails alone; the stream goes on.
              ++s.counters.failed;
              s.counters.last_error = r.err().message;
              caf::aout(self) << "answerer: " << r.err().message << "\n";
            }
          }
        } else if (!s.kv_updates.empty()) {
          run_updates(s, oldest_updates(s, s.settings.max_batch));
        } else if (audit_ready(s)) {
          // Idle: the audit whose full forward came back.
          auto it = std::find_if(s.audits.begin(), s.audits.end(), [](const auto& a) { return !a.second.full.empty(); });
          auto a = std::move(it->second);
          s.audits.erase(it);
          run_audit(self, std::move(a));
        }
        if (audit_to_request(s)) request_full(self);
        schedule(self);
      },
      [self](auditor_atom, auditor_actor auditor) { self->state.auditor = std::move(auditor); },
      [self](end_stream_atom, stream_id stream) {
        self->state.audits.erase(stream);  // an audit still waiting is left undone at the stream's end
        self->state.pending.erase(stream);
        self->state.kv_updates.erase(stream);
        self->state.llm->end_stream(stream);
      },
      [self](stats_atom) {
        auto c = self->state.counters;
        // Audits waiting count too: the run's summary waits for them.
        c.pending = self->state.pending.size() + self->state.on_demand.size() + self->state.audits.size();
        return c;
      },
  };
}

}  // namespace vlcache::actors
