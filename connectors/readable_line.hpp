#pragma once
/// \file
/// The console's view of the JSON lines: one line a person reads at a
/// glance. "gate #140 How many yellow shapes? -> 0 (truth 0, right)" for an
/// answer; "gate #140 frame: 12 of 100 tokens computed, 21.3 ms" for a frame.

#include <string>

#include <nlohmann/json.hpp>

namespace vlcache::connectors {

/// The readable form of an answer or frame line; "" for another kind.
[[nodiscard]] std::string readable_line(const nlohmann::json& line);

}  // namespace vlcache::connectors
