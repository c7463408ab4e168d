#pragma once
/// \file
/// The CURVE options every ZeroMQ client command shares (camera, listen,
/// request): our key pair and the pipeline's public key, both or neither,
/// and `vlcache keygen`, which writes a pair.

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "connectors/curve_keys.hpp"

namespace vlcache::app {

struct client_key_paths {
  std::string key;         ///< our .key file
  std::string server_key;  ///< the pipeline's .pub file
};

void add_client_key_options(CLI::App* command, client_key_paths& paths);

/// Nothing without options; the keys, or an error naming the file.
[[nodiscard]] expected<std::optional<connectors::curve_client_keys>> load_client_keys(const client_key_paths& paths);

void add_keygen_command(CLI::App& app, std::string& stem);
[[nodiscard]] int run_keygen(const std::string& stem);

}  // namespace vlcache::app
