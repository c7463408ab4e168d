#pragma once
/// \file
/// Client-side endpoint handling shared by `vlcache request` and `listen`:
/// HOST:PORT read as tcp://HOST:PORT, and a wait for the connection's
/// handshake so that "nothing listens there" and "the key was refused" are
/// said within seconds instead of a silent wait for a reply.

#include <string>

#include <zmq.hpp>

#include "core/base/error.hpp"

namespace vlcache::connectors {

/// "127.0.0.1:5570" -> "tcp://127.0.0.1:5570"; an endpoint with a scheme is kept.
[[nodiscard]] std::string zmq_endpoint(const std::string& address);

/// Connects `socket` to `endpoint` and waits up to `timeout_s` for the
/// ZeroMQ handshake (the CURVE one where the socket has keys). Errors name
/// the endpoint: nothing accepting connections, a refused key, no
/// handshake in time.
[[nodiscard]] status connect_and_handshake(zmq::context_t& ctx, zmq::socket_t& socket, const std::string& endpoint,
                                           double timeout_s);

}  // namespace vlcache::connectors
