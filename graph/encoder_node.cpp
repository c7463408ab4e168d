#include "graph/encoder_node.hpp"
#include "graph/pipeline_spec.hpp"

#include <atomic>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "actors/remote_encoder.hpp"

namespace vlcache::graph {
namespace {
std::atomic<bool> node_stop{false};
extern "C" void on_node_signal(int) { node_stop = true; }
}  // namespace

int run_encoder_node(const encoder_node_options& o) {
  if (o.tls.cert.empty() != o.tls.key.empty() || o.tls.cert.empty() != o.tls.ca.empty()) {
    std::fprintf(stderr, "error: --tls-cert, --tls-key and --tls-ca go together\n");
    return 1;
  }
  if (!is_loopback_host(o.host) && !o.insecure && !o.tls.enabled()) {
    std::fprintf(stderr, "error: --host: '%s'%s is beyond loopback without TLS: pass --tls-cert, --tls-key and "
                         "--tls-ca, or --insecure to serve it anyway\n",
                 o.host.c_str(), o.host.empty() ? " (every interface)" : "");
    return 1;
  }
  if (o.insecure && !o.tls.enabled() && !is_loopback_host(o.host))
    std::fprintf(stderr, "NOTICE: --insecure: the encoder node serves %s without authentication or encryption\n",
                 o.host.c_str());
  auto loaded = vision_encoder::load(o.model, o.options);
  if (!loaded) {
    std::fprintf(stderr, "error: --model: %s\n", loaded.err().message.c_str());
    return 1;
  }
  std::shared_ptr<vision_encoder> encoder = std::move(*loaded);
  if (encoder->random_weights())
    std::printf("NOTICE: %s -- tokens come from RANDOM weights and mean nothing\n", encoder->description().c_str());
  caf::actor_system_config cfg;
  actors::announce_remote_types(cfg);
  actors::configure_link(cfg, o.tls);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  // Detached: encoding is long work that must not hold a scheduler thread.
  auto node = sys.spawn<caf::detached>(actors::remote_encoder_node, encoder);
  // reuse_addr: a node restarted on its port binds while the old
  // connections still linger in TIME_WAIT.
  auto port = actors::serve_encoder_node(sys, node, o.host, o.port, o.tls.enabled());
  if (!port) {
    std::fprintf(stderr, "error: cannot listen on %s:%u: %s\n", o.host.c_str(), o.port, sys.render(port.error()).c_str());
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::printf("node: encoder listening on %s:%u%s\n", o.host.c_str(), *port,
              o.tls.enabled() ? " (TLS, clients verified against --tls-ca)" : "");
  std::fflush(stdout);
  node_stop = false;
  std::signal(SIGINT, on_node_signal);
  std::signal(SIGTERM, on_node_signal);
  while (!node_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::printf("node: stopping\n");
  std::fflush(stdout);
  (void)sys.middleman().unpublish(node, *port);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  // CAF 0.17's middleman sometimes waits forever at shutdown for a peer
  // that is already gone; the node holds nothing that needs flushing.
  std::fflush(nullptr);
  std::_Exit(0);
}

}  // namespace vlcache::graph
