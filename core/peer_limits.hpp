#pragma once
/// \file
/// Limits per network peer on what it may send the pipeline: message size,
/// message rate (a token bucket: `max_per_s` sustained, `burst` at once) and
/// streams opened. A peer is whatever identifies it best (its CURVE key when
/// the socket authenticates, else its address). Pure bookkeeping: the
/// caller passes the time, and counts and logs what was refused.

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace vlcache {

struct peer_limits_config {
  std::uint64_t max_message_bytes = 16u << 20;
  double max_per_s = 60.0;  ///< messages a second, sustained; 0: no limit
  double burst = 30.0;      ///< messages at once above the rate
  int max_streams = 16;     ///< streams one peer may have open; 0: no limit
};

enum class peer_verdict : std::uint8_t { admit, too_large, too_fast, too_many_streams };
[[nodiscard]] const char* to_string(peer_verdict v) noexcept;

class peer_limits {
 public:
  explicit peer_limits(const peer_limits_config& c) : config_(c) {}

  /// One message of `bytes` from `peer` for `stream` at time `now_s`
  /// (seconds, any monotonic origin). A refused message takes nothing from
  /// the peer's budget; an admitted one for a new stream opens it.
  [[nodiscard]] peer_verdict admit(const std::string& peer, const std::string& stream, std::uint64_t bytes,
                                   double now_s);
  /// The stream closed (went idle): it no longer counts for its peer.
  void stream_closed(const std::string& stream);
  [[nodiscard]] std::size_t peers() const noexcept { return peers_.size(); }

 private:
  struct peer_state {
    double tokens = 0, last_s = 0;
    bool seen = false;
    std::set<std::string> streams;
  };
  peer_limits_config config_;
  std::map<std::string, peer_state> peers_;
  std::map<std::string, std::string> owner_;  // stream -> the peer that opened it
};

}  // namespace vlcache
