#pragma once
/// \file
/// Flow control of one camera (in the spirit of MediaPipe's
/// FlowLimiterCalculator): at most `max_in_flight` frames between decode and
/// the sinks. A frame that finds every credit taken waits in a queue of at
/// most `queue` frames (drop_oldest: past that the oldest waiting frame is
/// dropped), is dropped at once (drop_newest), or is not read at all
/// (block: the reader asks `may_read()` first). Pure bookkeeping: every
/// admitted frame is dispatched, waiting or dropped, and counted.

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace vlcache {

enum class drop_policy : std::uint8_t { drop_oldest, drop_newest, block };
[[nodiscard]] const char* to_string(drop_policy p) noexcept;

template <class Job>
class flow_limiter {
 public:
  flow_limiter(int max_in_flight, int queue, drop_policy policy) noexcept
      : max_in_flight_(max_in_flight), queue_(queue), policy_(policy) {}

  /// A new frame: the job to dispatch now, or nothing (it waits, or was dropped).
  [[nodiscard]] std::optional<Job> admit(Job job) {
    if (in_flight_ < static_cast<std::uint64_t>(max_in_flight_) && waiting_.empty()) {
      ++in_flight_;
      return job;
    }
    if (policy_ == drop_policy::drop_newest) {
      ++dropped_newest_;
      return std::nullopt;
    }
    waiting_.push_back(std::move(job));
    if (static_cast<int>(waiting_.size()) > queue_) {
      waiting_.pop_front();
      ++dropped_oldest_;
    }
    return std::nullopt;
  }

  /// A dispatched frame left the pipeline (its credit is back): the oldest
  /// waiting job, to dispatch now, if any.
  [[nodiscard]] std::optional<Job> release() {
    if (in_flight_ > 0) --in_flight_;
    if (waiting_.empty()) return std::nullopt;
    Job next = std::move(waiting_.front());
    waiting_.pop_front();
    ++in_flight_;
    return next;
  }

  /// Whether the reader should read the next frame now (only `block` says no).
  [[nodiscard]] bool may_read() const noexcept {
    return policy_ != drop_policy::block || in_flight_ < static_cast<std::uint64_t>(max_in_flight_);
  }
  [[nodiscard]] bool has_credit() const noexcept { return in_flight_ < static_cast<std::uint64_t>(max_in_flight_); }
  [[nodiscard]] bool idle() const noexcept { return in_flight_ == 0 && waiting_.empty(); }
  [[nodiscard]] drop_policy policy() const noexcept { return policy_; }
  [[nodiscard]] std::uint64_t in_flight() const noexcept { return in_flight_; }
  [[nodiscard]] std::uint64_t waiting() const noexcept { return waiting_.size(); }
  [[nodiscard]] std::uint64_t dropped_newest() const noexcept { return dropped_newest_; }
  [[nodiscard]] std::uint64_t dropped_oldest() const noexcept { return dropped_oldest_; }

 private:
  int max_in_flight_;
  int queue_;
  drop_policy policy_;
  std::deque<Job> waiting_;
  std::uint64_t in_flight_ = 0, dropped_newest_ = 0, dropped_oldest_ = 0;
};

}  // namespace vlcache
