#pragma once
/// \file
/// Writes a command's JSON results (--json FILE); an empty path writes nothing.

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace vlcache::app {

/// False, after printing an error naming the file, when it cannot be written.
inline bool write_json_file(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return true;
  std::ofstream out(path);
  if (!out || !(out << j.dump(2) << "\n")) {
    std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace vlcache::app
