#include "graph/did_you_mean.hpp"

#include <algorithm>
#include <cctype>

namespace vlcache::graph {

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: three rows of the dynamic programme.
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  std::vector<int> before(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                               std::tolower(static_cast<unsigned char>(b[j - 1]))
                           ? 0
                           : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

std::optional<std::string> nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const int limit = std::clamp(static_cast<int>(name.size()) / 3, 1, 3);
  std::optional<std::string> best;
  int best_distance = limit + 1;
  for (const auto& c : candidates) {
    const int d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  auto n = nearest_name(name, candidates);
  return n ? "; did you mean '" + *n + "'?" : "";
}

}  // namespace vlcache::graph
