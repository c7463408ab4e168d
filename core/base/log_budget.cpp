#include "core/base/log_budget.hpp"

namespace vlcache {

std::optional<log_budget::line> log_budget::note(const std::string& reason, double now_s) {
  auto& s = reasons_[reason];
  ++s.seen;
  if (s.seen <= static_cast<std::uint64_t>(first_) || now_s - s.last_line_s >= interval_s_) {
    line l{s.suppressed};
    s.suppressed = 0;
    s.last_line_s = now_s;
    return l;
  }
  ++s.suppressed;
  return std::nullopt;
}

}  // namespace vlcache
