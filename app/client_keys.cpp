#include "app/client_keys.hpp"

#include <cstdio>

namespace vlcache::app {

void add_client_key_options(CLI::App* command, client_key_paths& paths) {
  auto* key = command->add_option("--key", paths.key, "Our CURVE key pair (vlcache keygen's .key) for a [security] pipeline");
  auto* server = command->add_option("--server-key", paths.server_key, "The pipeline's public key (its .pub)");
  key->needs(server);
  server->needs(key);
}

expected<std::optional<connectors::curve_client_keys>> load_client_keys(const client_key_paths& paths) {
  if (paths.key.empty()) return std::optional<connectors::curve_client_keys>{};
  auto own = connectors::read_key_pair(paths.key);
  if (!own) return error{own.err().code, "--key: " + own.err().message};
  auto server = connectors::read_public_key(paths.server_key);
  if (!server) return error{server.err().code, "--server-key: " + server.err().message};
  return std::optional<connectors::curve_client_keys>{connectors::curve_client_keys{*own, *server}};
}

void add_keygen_command(CLI::App& app, std::string& stem) {
  auto* c = app.add_subcommand("keygen", "Write a CURVE key pair: STEM.key (secret, mode 0600) and STEM.pub");
  c->add_option("stem", stem, "Path without extension, e.g. keys/pipeline")->required();
}

int run_keygen(const std::string& stem) {
  auto pair = connectors::generate_key_pair();
  if (!pair) {
    std::fprintf(stderr, "error: %s\n", pair.err().message.c_str());
    return 1;
  }
  if (auto st = connectors::write_key_pair(*pair, stem); !st) {
    std::fprintf(stderr, "error: %s\n", st.err().message.c_str());
    return 1;
  }
  std::printf("wrote %s.key (secret) and %s.pub (public key %s)\n", stem.c_str(), stem.c_str(),
              pair->public_key.c_str());
  return 0;
}

}  // namespace vlcache::app
