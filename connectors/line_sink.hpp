#pragma once
/// \file
/// Where result lines go: the console, a JSON-lines file, or a ZeroMQ PUB
/// socket (topic = stream name, payload = the JSON line).

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "connectors/curve_keys.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

class line_sink {
 public:
  virtual ~line_sink() = default;
  /// `topic` is the stream the line is about.
  virtual void write(const std::string& topic, const std::string& line) = 0;
  [[nodiscard]] virtual const char* kind() const noexcept = 0;
};

/// What the console prints: readable answer lines (the default), answer and
/// frame lines, or every line as its JSON.
enum class console_show { answers, frames, json };
[[nodiscard]] std::optional<console_show> parse_console_show(const std::string& name);
[[nodiscard]] std::unique_ptr<line_sink> make_console_sink(console_show show = console_show::answers);
/// Opens (truncates) `path`; the error names the file.
[[nodiscard]] expected<std::unique_ptr<line_sink>> make_jsonl_sink(const std::string& path);
/// Binds a PUB socket at `endpoint` (tcp://HOST:PORT, ipc://...); the error
/// names the endpoint. Each line goes out as [topic][line].
/// With `curve`, only allowed subscriber keys receive (connectors/curve_auth).
[[nodiscard]] expected<std::unique_ptr<line_sink>> make_zmq_sink(
    const std::string& endpoint, const std::optional<curve_server_keys>& curve = std::nullopt);

}  // namespace vlcache::connectors
