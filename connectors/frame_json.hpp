#pragma once
/// \file
/// The line a sink writes for one encoded frame ("kind": "frame": the token
/// sequence's size and the cache work; schema in docs/architecture.md).

#include <cstdint>
#include <string>

#include "core/cache/cache_stats.hpp"

namespace vlcache::connectors {

/// One line's worth of facts about an encoded frame.
struct frame_record {
  std::string stream_name;
  stream_id stream = 0;
  std::uint64_t seq = 0;
  double capture_ms = 0;
  int tokens = 0, computed = 0, dim = 0;
  bool full = false;
  double token_norm_mean = 0;  ///< mean L2 norm of the output tokens
  double hash_ms = 0, gate_ms = 0, encode_ms = 0, total_ms = 0;
};

[[nodiscard]] std::string frame_json_line(const frame_record& r);

}  // namespace vlcache::connectors
