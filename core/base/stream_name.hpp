#pragma once
/// \file
/// What a stream (camera) name may be, checked where names enter: the
/// config, the ingest socket, the request endpoint. Names reach logs, JSON,
/// Prometheus labels and the live page, so they are valid UTF-8, at most
/// 64 bytes, and printable (no control characters: no forged log lines).

#include <cstddef>
#include <string>

#include "core/base/error.hpp"

namespace vlcache {

inline constexpr std::size_t max_stream_name_bytes = 64;

/// The error says what is wrong without echoing raw bytes.
[[nodiscard]] status check_stream_name(const std::string& name);

/// `text` with control characters and invalid UTF-8 shown as \xNN: safe in a log line.
[[nodiscard]] std::string printable(const std::string& text, std::size_t max_bytes = 80);

}  // namespace vlcache
