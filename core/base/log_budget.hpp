#pragma once
/// \file
/// How many log lines a flood of refusals may write: the first few of each
/// reason, then one line per interval saying how many were suppressed.
/// Reasons are a fixed set chosen by the caller (never an error's text), so
/// the counters stay bounded too. Pure bookkeeping: the caller passes the time.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace vlcache {

class log_budget {
 public:
  log_budget(int first = 5, double interval_s = 10.0) : first_(first), interval_s_(interval_s) {}

  struct line {
    std::uint64_t suppressed = 0;  ///< refusals of this reason not logged since the last line
  };
  /// One refusal of `reason` at `now_s`: a line to write, or none.
  [[nodiscard]] std::optional<line> note(const std::string& reason, double now_s);

 private:
  struct state {
    std::uint64_t seen = 0, suppressed = 0;
    double last_line_s = 0;
  };
  int first_;
  double interval_s_;
  std::map<std::string, state> reasons_;
};

}  // namespace vlcache
