#include "core/peer_limits.hpp"

#include <algorithm>

namespace vlcache {

const char* to_string(peer_verdict v) noexcept {
  switch (v) {
    case peer_verdict::admit: return "admitted";
    case peer_verdict::too_large: return "message larger than the peer limit";
    case peer_verdict::too_fast: return "peer over its message rate";
    case peer_verdict::too_many_streams: return "peer over its stream limit";
  }
  return "?";
}

peer_verdict peer_limits::admit(const std::string& peer, const std::string& stream, std::uint64_t bytes,
                                double now_s) {
  if (bytes > config_.max_message_bytes) return peer_verdict::too_large;
  peer_state& p = peers_[peer];
  if (config_.max_per_s > 0) {
    const double capacity = std::max(1.0, config_.burst);
    p.tokens = p.seen ? std::min(capacity, p.tokens + (now_s - p.last_s) * config_.max_per_s) : capacity;
    p.seen = true;
    p.last_s = now_s;
    if (p.tokens < 1.0) return peer_verdict::too_fast;
  }
  const bool new_stream = owner_.find(stream) == owner_.end();
  if (new_stream && config_.max_streams > 0 && static_cast<int>(p.streams.size()) >= config_.max_streams)
    return peer_verdict::too_many_streams;
  if (config_.max_per_s > 0) p.tokens -= 1.0;
  if (new_stream) {
    owner_[stream] = peer;
    p.streams.insert(stream);
  }
  return peer_verdict::admit;
}

void peer_limits::stream_closed(const std::string& stream) {
  auto it = owner_.find(stream);
  if (it == owner_.end()) return;
  auto p = peers_.find(it->second);
  if (p != peers_.end()) p->second.streams.erase(stream);
  owner_.erase(it);
}

}  // namespace vlcache
