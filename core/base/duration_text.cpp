#include "core/base/duration_text.hpp"

#include <cmath>
#include <cstdio>

namespace vlcache {

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[48];
  if (seconds < 1.0) {
    std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1000.0);
  } else if (seconds < 60.0) {
    // Two significant figures at most, trailing zeros dropped: 2 s, 2.5 s, 12 s.
    std::snprintf(buf, sizeof buf, "%.*f s", seconds < 10.0 && std::fmod(seconds, 1.0) >= 0.05 ? 1 : 0, seconds);
  } else if (seconds < 3600.0) {
    const double minutes = seconds / 60.0;
    const double rest = std::fmod(seconds, 60.0);
    if (rest < 0.5 || rest > 59.5) std::snprintf(buf, sizeof buf, "%.0f min", std::round(minutes));
    else std::snprintf(buf, sizeof buf, "%d min %.0f s", static_cast<int>(minutes), rest);
  } else {
    const int h = static_cast<int>(seconds / 3600.0);
    const int m = static_cast<int>(std::round((seconds - h * 3600.0) / 60.0));
    if (m == 0) std::snprintf(buf, sizeof buf, "%d h", h);
    else std::snprintf(buf, sizeof buf, "%d h %d min", h, m);
  }
  return buf;
}

}  // namespace vlcache
