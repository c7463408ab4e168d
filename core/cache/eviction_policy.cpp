#include "core/cache/eviction_policy.hpp"

namespace vlcache {

const char* to_string(eviction_policy p) noexcept {
  switch (p) {
    case eviction_policy::value: return "value";
    case eviction_policy::lru: return "lru";
    case eviction_policy::lfu: return "lfu";
    case eviction_policy::decayed_frequency: return "decayed_frequency";
  }
  return "unknown";
}

expected<eviction_policy> parse_eviction_policy(const std::string& name) {
  if (name == "value") return eviction_policy::value;
  if (name == "lru") return eviction_policy::lru;
  if (name == "lfu") return eviction_policy::lfu;
  if (name == "decayed_frequency") return eviction_policy::decayed_frequency;
  return error{errc::invalid_config, "unknown eviction policy '" + name +
                                         "' (expected value, lru, lfu or decayed_frequency)"};
}

}  // namespace vlcache
