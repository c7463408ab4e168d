#include "core/base/error.hpp"

namespace vlcache {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::invalid_image: return "invalid_image";
    case errc::invalid_config: return "invalid_config";
    case errc::not_found: return "not_found";
    case errc::io_error: return "io_error";
    case errc::capacity: return "capacity";
    case errc::busy: return "busy";
    case errc::cancelled: return "cancelled";
  }
  return "unknown";
}

}  // namespace vlcache
