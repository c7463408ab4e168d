#include "connectors/peer_limits.hpp"

#include <algorithm>

namespace vlcache {

const char* to_string(peer_verdict v) noexcept {
  switch (v) {
    case peer_verdict::admit: return "admitted";
    case peer_verdict::too_large: return "message larger than the peer limit";
    case peer_verdict::too_fast: return "peer over its message rate";
    case peer_verdict::too_many_streams: return "peer over its stream limit";
    case peer_verdict::not_owner: return "stream owned by another peer";
    case peer_verdict::not_allowed: return "stream not in the peer's allow-list entry";
  }
  return "?";
}

peer_verdict peer_limits::admit_message(const std::string& peer, std::uint64_t bytes, double now_s) {
  if (bytes > config_.max_message_bytes) return peer_verdict::too_large;
  if (config_.max_per_s <= 0) return peer_verdict::admit;
  peer_state& p = peers_[peer];
  const double capacity = std::max(1.0, config_.burst);
  p.tokens = p.seen ? std::min(capacity, p.tokens + (now_s - p.last_s) * config_.max_per_s) : capacity;
  p.seen = true;
  p.last_s = now_s;
  if (p.tokens < 1.0) return peer_verdict::too_fast;
  p.tokens -= 1.0;
  return peer_verdict::admit;
}

peer_verdict peer_limits::may_use(const std::string& peer, const std::string& stream) const {
  if (auto it = owner_.find(stream); it != owner_.end())
    return it->second == peer ? peer_verdict::admit : peer_verdict::not_owner;
  if (auto a = config_.allowed_streams.find(peer); a != config_.allowed_streams.end() && a->second.count(stream) == 0)
    return peer_verdict::not_allowed;
  const auto p = peers_.find(peer);
  const std::size_t open = p == peers_.end() ? 0 : p->second.streams.size();
  if (config_.max_streams > 0 && static_cast<int>(open) >= config_.max_streams) return peer_verdict::too_many_streams;
  return peer_verdict::admit;
}

void peer_limits::open(const std::string& peer, const std::string& stream) {
  owner_[stream] = peer;
  peers_[peer].streams.insert(stream);
}

std::string peer_limits::owner(const std::string& stream) const {
  auto it = owner_.find(stream);
  return it == owner_.end() ? std::string() : it->second;
}

void peer_limits::stream_closed(const std::string& stream) {
  auto it = owner_.find(stream);
  if (it == owner_.end()) return;
  auto p = peers_.find(it->second);
  if (p != peers_.end()) p->second.streams.erase(stream);
  owner_.erase(it);
}

}  // namespace vlcache
