#pragma once
/// \file
/// When a stream gets an answer: every N frames, when the share of the
/// frame's patches that changed reaches a threshold, on its first frame, or
/// on demand (the request endpoint, outside this policy).

#include <cstdint>
#include <map>

#include "core/cache/cache_stats.hpp"
#include "core/base/error.hpp"

namespace vlcache {

struct answer_policy_config {
  int every_n_frames = 0;         ///< 0 = not periodically
  double change_threshold = 0.0;  ///< share of patches recomputed in (0, 1]; 0 = off
  bool first_frame = true;        ///< answer a stream's first frame

  [[nodiscard]] status validate() const;
};

class answer_policy {
 public:
  explicit answer_policy(answer_policy_config c) : c_(c) {}
  /// Whether this frame of `stream`, with `changed_share` of its patches
  /// recomputed (1 for a full frame), gets an answer. Counts the frame.
  [[nodiscard]] bool due(stream_id stream, double changed_share);
  void end_stream(stream_id stream) { since_.erase(stream); }
  [[nodiscard]] const answer_policy_config& config() const noexcept { return c_; }

 private:
  answer_policy_config c_;
  std::map<stream_id, std::uint64_t> since_;  // frames since the stream's last answer
};

}  // namespace vlcache
