#include "core/base/flow_limiter.hpp"

namespace vlcache {

const char* to_string(drop_policy p) noexcept {
  switch (p) {
    case drop_policy::drop_oldest: return "drop_oldest";
    case drop_policy::drop_newest: return "drop_newest";
    case drop_policy::block: return "block";
  }
  return "?";
}

}  // namespace vlcache
