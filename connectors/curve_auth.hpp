#pragma once
/// \file
/// CURVE on a ZeroMQ socket: the pipeline's sockets are CURVE servers whose
/// ZAP handler (ZeroMQ's authentication protocol, RFC 27) lets in only the
/// allowed client keys; a refused peer is logged with its address and key
/// and counted. Clients (camera, listen, request) set their pair and the
/// server's public key. Used by the connectors' .cpp files only (zmq.hpp).

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "connectors/curve_keys.hpp"

namespace vlcache::connectors {

/// Answers ZAP requests for one context (each context has its own handler);
/// destroy it before the context and after the sockets it guards.
class zap_authenticator {
 public:
  zap_authenticator(zmq::context_t& ctx, const std::vector<std::string>& allowed, std::string what);
  ~zap_authenticator();
  zap_authenticator(const zap_authenticator&) = delete;
  zap_authenticator& operator=(const zap_authenticator&) = delete;

 private:
  void serve();
  zmq::socket_t socket_;
  std::set<std::string> allowed_;  // Z85
  std::string what_;               // the socket's role, for the log
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Makes `socket` a CURVE server with the pipeline's pair; ZAP decides who
/// gets in. Call before bind/connect.
void make_curve_server(zmq::socket_t& socket, const curve_server_keys& keys);
/// Makes `socket` a CURVE client. Call before connect.
void make_curve_client(zmq::socket_t& socket, const curve_client_keys& keys);

}  // namespace vlcache::connectors
