#include "connectors/line_sink.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <zmq.hpp>

namespace vlcache::connectors {
namespace {

class console_sink final : public line_sink {
 public:
  void write(const std::string&, const std::string& line) override {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  const char* kind() const noexcept override { return "console"; }
};

class jsonl_sink final : public line_sink {
 public:
  explicit jsonl_sink(std::ofstream f) : f_(std::move(f)) {}
  void write(const std::string&, const std::string& line) override { f_ << line << '\n' << std::flush; }
  const char* kind() const noexcept override { return "jsonl"; }

 private:
  std::ofstream f_;
};

class zmq_sink final : public line_sink {
 public:
  zmq_sink() : socket_(context_, zmq::socket_type::pub) {}
  zmq::context_t context_;
  zmq::socket_t socket_;
  void write(const std::string& topic, const std::string& line) override {
    // PUB drops messages for slow subscribers at the high-water mark: never blocks the pipeline.
    (void)socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)socket_.send(zmq::buffer(line), zmq::send_flags::dontwait);
  }
  const char* kind() const noexcept override { return "zmq"; }
};

}  // namespace

expected<std::unique_ptr<line_sink>> make_zmq_sink(const std::string& endpoint) {
  try {
    auto s = std::make_unique<zmq_sink>();
    s->socket_.set(zmq::sockopt::linger, 200);
    s->socket_.bind(endpoint);
    return std::unique_ptr<line_sink>(std::move(s));
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot bind ZeroMQ PUB socket at '" + endpoint + "': " + e.what()};
  }
}

std::unique_ptr<line_sink> make_console_sink() { return std::make_unique<console_sink>(); }

expected<std::unique_ptr<line_sink>> make_jsonl_sink(const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return error{errc::io_error, "cannot write '" + path + "': " + std::strerror(errno)};
  return std::unique_ptr<line_sink>(std::make_unique<jsonl_sink>(std::move(f)));
}

}  // namespace vlcache::connectors
