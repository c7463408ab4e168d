#pragma once
/// \file
/// The "did you mean" of a config error: the known name nearest a mistyped
/// one by edit distance, when it is near enough to be the likely intent.

#include <optional>
#include <string>
#include <vector>

namespace vlcache::graph {

/// Levenshtein distance (insert, delete, substitute, and a swap of two
/// neighbours counts one: "mda" is one step from "mad").
[[nodiscard]] int edit_distance(const std::string& a, const std::string& b);

/// The candidate nearest `name`, if within a third of its length (at least
/// one step, at most three); ties go to the first candidate.
[[nodiscard]] std::optional<std::string> nearest_name(const std::string& name,
                                                      const std::vector<std::string>& candidates);

/// "; did you mean 'mad'?" or "".
[[nodiscard]] std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace vlcache::graph
