#pragma once
/// \file
/// Reads typed, range-checked values out of one TOML table and records every
/// problem with where it is and its full key ("demo.toml:4:1: [gate].mda:
/// unknown key; did you mean 'mad'?"), so a config reports all of its errors
/// at once instead of the first.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace vlcache::graph {

class table_reader {
 public:
  /// `path` is the table's dotted name ("" for the root), for messages;
  /// `base` the folder that relative paths in it are read against (the
  /// config file's), empty for the working directory.
  table_reader(const toml::table* table, std::string path, std::vector<std::string>& errors,
               std::filesystem::path base = {});

  [[nodiscard]] std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo,
                                                    std::int64_t hi);
  [[nodiscard]] std::optional<double> number(const std::string& key, double lo, double hi);
  [[nodiscard]] std::optional<bool> boolean(const std::string& key);
  [[nodiscard]] std::optional<std::string> string(const std::string& key);
  /// A file or folder name, made absolute against the config's folder.
  [[nodiscard]] std::optional<std::string> path(const std::string& key);
  /// A string or an array of strings; empty when absent.
  [[nodiscard]] std::vector<std::string> strings(const std::string& key);
  [[nodiscard]] const toml::table* table(const std::string& key);

  /// For keys read by other means (arrays of tables).
  void mark_known(const std::string& key);
  /// Reports every key of the table that no accessor asked for, with the
  /// nearest known key when one is a likely typo.
  void reject_unknown_keys();
  /// Records an error at the key (or at the table when the key is absent).
  void fail(const std::string& key, const std::string& what);
  /// Whether any key of this table has been reported as wrong.
  [[nodiscard]] bool failed() const noexcept { return failures_ > 0; }
  [[nodiscard]] std::string key_name(const std::string& key) const;
  [[nodiscard]] const std::filesystem::path& base() const noexcept { return base_; }

 private:
  const toml::node* get(const std::string& key);
  /// "file:line:column: " of the key, or of the table when the key is absent.
  [[nodiscard]] std::string where(const std::string& key) const;

  const toml::table* table_;
  std::string path_;
  std::vector<std::string>& errors_;
  std::filesystem::path base_;
  std::set<std::string> seen_;
  int failures_ = 0;
};

/// Makes every error of a config read as "file:line:column: [table].key:
/// what" (or "file: what" where no key is named), and puts unknown keys
/// first: a typo is the primary error, and often the cause of the rest.
void place_errors(const toml::table& root, const std::string& origin, std::vector<std::string>& errors);

}  // namespace vlcache::graph
