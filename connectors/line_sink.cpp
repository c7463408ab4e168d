#include "connectors/line_sink.hpp"

#include <nlohmann/json.hpp>

#include "connectors/readable_line.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <zmq.hpp>

#include "connectors/curve_auth.hpp"

namespace vlcache::connectors {
namespace {

class console_sink final : public line_sink {
 public:
  explicit console_sink(console_show show) : show_(show) {}
  void write(const std::string&, const std::string& line) override {
    std::string out = line;
    if (show_ != console_show::json) {
      // Every frame passes here: frame lines the console does not show are
      // skipped by their kind (as the lines write it) before any parse.
      if (show_ == console_show::answers && line.find("\"kind\":\"frame\"") != std::string::npos) return;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      out = j.is_discarded() ? line : readable_line(j);
      if (out.empty()) return;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  const char* kind() const noexcept override { return "console"; }

 private:
  console_show show_;
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
  explicit zmq_sink(const std::optional<curve_server_keys>& curve, const std::string& endpoint)
      : auth_(curve ? std::make_unique<zap_authenticator>(context_, curve->allowed, "zmq sink " + endpoint) : nullptr),
        socket_(context_, zmq::socket_type::pub) {
    socket_.set(zmq::sockopt::maxmsgsize, std::int64_t{64} << 10);  // subscriptions only come in: small
    if (curve) make_curve_server(socket_, *curve);
  }
  zmq::context_t context_;
  std::unique_ptr<zap_authenticator> auth_;  // after the context, before the socket
  zmq::socket_t socket_;
  void write(const std::string& topic, const std::string& line) override {
    // PUB drops messages for slow subscribers at the high-water mark: never blocks the pipeline.
    (void)socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    (void)socket_.send(zmq::buffer(line), zmq::send_flags::dontwait);
  }
  const char* kind() const noexcept override { return "zmq"; }
};

}  // namespace

expected<std::unique_ptr<line_sink>> make_zmq_sink(const std::string& endpoint,
                                                   const std::optional<curve_server_keys>& curve) {
  try {
    auto s = std::make_unique<zmq_sink>(curve, endpoint);
    s->socket_.set(zmq::sockopt::linger, 200);
    s->socket_.bind(endpoint);
    return std::unique_ptr<line_sink>(std::move(s));
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot bind ZeroMQ PUB socket at '" + endpoint + "': " + e.what()};
  }
}

std::unique_ptr<line_sink> make_console_sink(console_show show) { return std::make_unique<console_sink>(show); }

std::optional<console_show> parse_console_show(const std::string& name) {
  if (name == "answers") return console_show::answers;
  if (name == "frames") return console_show::frames;
  if (name == "json") return console_show::json;
  return std::nullopt;
}

expected<std::unique_ptr<line_sink>> make_jsonl_sink(const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return error{errc::io_error, "cannot write '" + path + "': " + std::strerror(errno)};
  return std::unique_ptr<line_sink>(std::make_unique<jsonl_sink>(std::move(f)));
}

}  // namespace vlcache::connectors
