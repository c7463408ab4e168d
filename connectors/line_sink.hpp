#pragma once
/// \file
/// Where result lines go: the console, or a JSON-lines file.

#include <cstdio>
#include <memory>
#include <string>

#include "core/error.hpp"

namespace vlcache::connectors {

class line_sink {
 public:
  virtual ~line_sink() = default;
  virtual void write(const std::string& line) = 0;
  [[nodiscard]] virtual const char* kind() const noexcept = 0;
};

[[nodiscard]] std::unique_ptr<line_sink> make_console_sink();
/// Opens (truncates) `path`; the error names the file.
[[nodiscard]] expected<std::unique_ptr<line_sink>> make_jsonl_sink(const std::string& path);

}  // namespace vlcache::connectors
