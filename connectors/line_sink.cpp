#include "connectors/line_sink.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace vlcache::connectors {
namespace {

class console_sink final : public line_sink {
 public:
  void write(const std::string& line) override {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  const char* kind() const noexcept override { return "console"; }
};

class jsonl_sink final : public line_sink {
 public:
  explicit jsonl_sink(std::ofstream f) : f_(std::move(f)) {}
  void write(const std::string& line) override { f_ << line << '\n' << std::flush; }
  const char* kind() const noexcept override { return "jsonl"; }

 private:
  std::ofstream f_;
};

}  // namespace

std::unique_ptr<line_sink> make_console_sink() { return std::make_unique<console_sink>(); }

expected<std::unique_ptr<line_sink>> make_jsonl_sink(const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return error{errc::io_error, "cannot write '" + path + "': " + std::strerror(errno)};
  return std::unique_ptr<line_sink>(std::make_unique<jsonl_sink>(std::move(f)));
}

}  // namespace vlcache::connectors
