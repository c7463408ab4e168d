#pragma once
/// \file
/// Reads typed, range-checked values out of one TOML table and records every
/// problem with its full key ("[gate].ahash: ..."), so a config reports all
/// of its errors at once instead of the first.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace vlcache::graph {

class table_reader {
 public:
  /// `path` is the table's dotted name ("" for the root), for messages.
  table_reader(const toml::table* table, std::string path, std::vector<std::string>& errors);

  [[nodiscard]] std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo,
                                                    std::int64_t hi);
  [[nodiscard]] std::optional<double> number(const std::string& key, double lo, double hi);
  [[nodiscard]] std::optional<bool> boolean(const std::string& key);
  [[nodiscard]] std::optional<std::string> string(const std::string& key);
  /// A string or an array of strings; empty when absent.
  [[nodiscard]] std::vector<std::string> strings(const std::string& key);
  [[nodiscard]] const toml::table* table(const std::string& key);

  /// For keys read by other means (arrays of tables).
  void mark_known(const std::string& key);
  /// Reports every key of the table that no accessor asked for.
  void reject_unknown_keys();
  void fail(const std::string& key, const std::string& what);
  /// Whether any key of this table has been reported as wrong.
  [[nodiscard]] bool failed() const noexcept { return failures_ > 0; }
  [[nodiscard]] std::string key_name(const std::string& key) const;

 private:
  const toml::node* get(const std::string& key);

  const toml::table* table_;
  std::string path_;
  std::vector<std::string>& errors_;
  std::set<std::string> seen_;
  int failures_ = 0;
};

}  // namespace vlcache::graph
