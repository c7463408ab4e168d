#pragma once
/// \file
/// Which entry a byte-bounded cache gives up first: shared by the token
/// index (single tokens) and the encoder's store budget (stream states;
/// `value` applies to those alone).

#include <string>

#include "core/base/error.hpp"

namespace vlcache {

enum class eviction_policy {
  value,              ///< stream states only: the least compute saved per byte first (docs/design/cache-decision.md)
  lru,                ///< least recently used first
  lfu,                ///< fewest uses first, least recent among equals
  decayed_frequency,  ///< smallest exponentially decayed use count first
};

[[nodiscard]] const char* to_string(eviction_policy p) noexcept;
[[nodiscard]] expected<eviction_policy> parse_eviction_policy(const std::string& name);

}  // namespace vlcache
