#include "connectors/readable_line.hpp"

#include <cstdio>

namespace vlcache::connectors {

namespace {

std::string text_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string frame_name(const nlohmann::json& j) {
  return text_of(j, "stream") + " #" + std::to_string(j.value("seq", std::uint64_t{0}));
}

}  // namespace

std::string readable_line(const nlohmann::json& j) {
  const std::string kind = text_of(j, "kind");
  if (kind == "answer") {
    std::string s = frame_name(j) + (j.value("on_demand", false) ? " (asked)" : "") + " " + text_of(j, "question") +
                    " -> " + text_of(j, "text");
    if (j.contains("truth"))
      s += " (truth " + text_of(j, "truth") + ", " + (j.value("correct", false) ? "right" : "WRONG") + ")";
    if (j.value("random_weights", false)) s += "  [random weights: not an answer]";
    return s;
  }
  if (kind == "frame") {
    char b[160];
    const auto total = j.value("tokens", 0);
    const auto computed = j.value("tokens_computed", 0);
    const double ms = j.contains("latency_ms") ? j["latency_ms"].value("total", 0.0) : 0.0;
    std::snprintf(b, sizeof b, " frame: %d of %d tokens computed, %.1f ms", computed, total, ms);
    return frame_name(j) + b;
  }
  return "";
}

}  // namespace vlcache::connectors
