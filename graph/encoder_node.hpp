#pragma once
/// \file
/// `vlcache node --role encoder`: serves the vision encoder to pipelines on
/// other machines as a CAF remote actor, until SIGINT/SIGTERM.

#include "actors/remote_encoder.hpp"
#include <cstdint>
#include <string>

#include "core/models/vision_encoder.hpp"

namespace vlcache::graph {

struct encoder_node_options {
  std::string model = "vit-b16";
  encoder_options options;
  std::string host = "127.0.0.1";  ///< address to listen on
  std::uint16_t port = 0;
  bool insecure = false;  ///< allow a host beyond loopback without TLS
  actors::link_tls tls;   ///< --tls-cert/--tls-key/--tls-ca: mutual TLS with the pipeline
};

[[nodiscard]] int run_encoder_node(const encoder_node_options& o);

}  // namespace vlcache::graph
