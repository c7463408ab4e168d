#include "connectors/zmq_endpoint.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "core/base/duration_text.hpp"

namespace vlcache::connectors {

std::string zmq_endpoint(const std::string& address) {
  return address.find("://") == std::string::npos ? "tcp://" + address : address;
}

status connect_and_handshake(zmq::context_t& ctx, zmq::socket_t& socket, const std::string& endpoint,
                             double timeout_s) {
  // libzmq reports the connection's events on an inproc pair (socket monitor).
  static std::atomic<int> serial{0};
  const std::string events_at = "inproc://vlcache-connect-" + std::to_string(serial++);
  constexpr int watched = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_DISCONNECTED;
  try {
    if (zmq_socket_monitor(socket.handle(), events_at.c_str(), watched) != 0)
      return error{errc::io_error, "cannot watch the connection to " + endpoint + ": " + zmq_strerror(zmq_errno())};
    zmq::socket_t events(ctx, zmq::socket_type::pair);
    events.set(zmq::sockopt::linger, 0);
    events.connect(events_at);
    socket.connect(endpoint);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    bool tcp_connected = false;
    int refused = 0;
    status outcome = error{errc::io_error, ""};
    bool decided = false;
    while (!decided && std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(events), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t event, address;  // [u16 event, u32 value], then the endpoint
      if (!events.recv(event) || !event.more() || !events.recv(address) || event.size() < 6) continue;
      std::uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof id);
      switch (id) {
        case ZMQ_EVENT_CONNECTED: tcp_connected = true; break;
        case ZMQ_EVENT_CONNECT_RETRIED: ++refused; break;
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: outcome = status{}; decided = true; break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
          outcome = error{errc::io_error, endpoint + " refused this client's key (CURVE): is its public "
                                                              "key in the pipeline's allowed_clients?"};
          decided = true;
          break;
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
          outcome = error{errc::io_error,
                          endpoint + ": the handshake failed (a CURVE server key that is not the pipeline's, or "
                                     "CURVE on one side only)"};
          decided = true;
          break;
        default: break;
      }
    }
    zmq_socket_monitor(socket.handle(), nullptr, 0);
    if (decided) return outcome;
    const std::string waited = duration_text(timeout_s);
    if (!tcp_connected)
      return error{errc::io_error, "nothing accepts connections at " + endpoint + " (" +
                                       (refused > 0 ? "refused, " + std::to_string(refused) + " tries" : "no answer") +
                                       " in " + waited + "): is the pipeline running with that request endpoint?"};
    return error{errc::io_error, endpoint + " accepted the connection but did not complete a ZeroMQ handshake in " +
                                     waited + " (a CURVE server that expects keys, or not a ZeroMQ endpoint)"};
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot connect to " + endpoint + ": " + e.what()};
  }
}

}  // namespace vlcache::connectors
