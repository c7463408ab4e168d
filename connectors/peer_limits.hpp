#pragma once
/// \file
/// Limits per network peer on what it may send the pipeline: message size,
/// message rate (a token bucket: `max_per_s` sustained, `burst` at once),
/// streams opened, and which streams are its own. A peer is whatever
/// identifies it best (its CURVE key when the socket authenticates, else its
/// address). A stream belongs to the peer that opened it until it closes:
/// another peer's frames for it are refused. Pure bookkeeping: the caller
/// passes the time, and counts and logs what was refused.
///
/// The order of use is the order of cost: admit_message() for every message
/// before it is parsed, may_use() before its image is decoded, open() once
/// the frame is good and the pipeline took the stream.

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
  /// Peers (CURVE keys) that may open only the streams named; a peer not
  /// listed may open any.
  std::map<std::string, std::set<std::string>> allowed_streams;
};

enum class peer_verdict : std::uint8_t { admit, too_large, too_fast, too_many_streams, not_owner, not_allowed };
[[nodiscard]] const char* to_string(peer_verdict v) noexcept;

class peer_limits {
 public:
  explicit peer_limits(const peer_limits_config& c) : config_(c) {}

  /// One message of `bytes` from `peer` at time `now_s` (seconds, any
  /// monotonic origin), parsed or not: its size and the peer's rate. An
  /// admitted message takes one from the peer's budget.
  [[nodiscard]] peer_verdict admit_message(const std::string& peer, std::uint64_t bytes, double now_s);
  /// Whether `peer` may send frames of `stream`: its own, or a new one it
  /// may open (its allow-list, its stream count). Registers nothing.
  [[nodiscard]] peer_verdict may_use(const std::string& peer, const std::string& stream) const;
  /// `peer` opened `stream` (after may_use() said admit): it owns it now.
  void open(const std::string& peer, const std::string& stream);
  /// The stream closed (went idle): it no longer counts for its peer.
  void stream_closed(const std::string& stream);
  /// The peer that owns `stream`, or "".
  [[nodiscard]] std::string owner(const std::string& stream) const;
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
