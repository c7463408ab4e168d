#include "connectors/zmq_listener.hpp"
#include "core/base/elapsed.hpp"

#include <chrono>
#include <map>
#include <zmq.hpp>

#include "connectors/curve_auth.hpp"
#include "connectors/zmq_endpoint.hpp"

namespace vlcache::connectors {

expected<int> listen(const listen_options& o,
                     const std::function<void(const std::string&, const std::string&)>& on_line) {
  try {
    zmq::context_t ctx;
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::maxmsgsize, std::int64_t{16} << 20);  // a publisher's line is small
    if (o.curve) make_curve_client(sub, *o.curve);
    if (o.each > 0 && o.streams.empty())
      return error{errc::invalid_argument, "a count per stream needs the streams named"};
    if (o.streams.empty()) sub.set(zmq::sockopt::subscribe, "");
    for (const auto& s : o.streams) sub.set(zmq::sockopt::subscribe, s);
    // The socket's handshake events, read from an inproc pair (libzmq's socket monitor).
    zmq::socket_t events(ctx, zmq::socket_type::pair);
    bool connected = false;
    if (o.on_connected) {
      if (zmq_socket_monitor(sub.handle(), "inproc://vlcache-listen-events", ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0)
        return error{errc::io_error, std::string("cannot watch the connection to '") + o.endpoint + "': " +
                                         zmq_strerror(zmq_errno())};
      events.set(zmq::sockopt::linger, 0);
      events.connect("inproc://vlcache-listen-events");
    }
    sub.connect(zmq_endpoint(o.endpoint));
    const auto start = std::chrono::steady_clock::now();
    int received = 0;
    std::map<std::string, int> per_stream;
    for (const auto& s : o.streams) per_stream[s] = 0;
    auto done = [&] {
      if (o.count > 0 && received >= o.count) return true;
      if (o.each <= 0) return false;
      for (const auto& [s, n] : per_stream)
        if (n < o.each) return false;
      return true;
    };
    auto wanted = [&] {
      std::string w;
      if (o.count > 0) w = std::to_string(o.count) + " messages";
      if (o.each > 0) {
        w += w.empty() ? "" : " or ";
        w += std::to_string(o.each) + " from each stream";
      }
      return w;
    };
    auto got = [&] {
      std::string g = std::to_string(received);
      for (const auto& [s, n] : per_stream) g += ", " + s + " " + std::to_string(n);
      return g;
    };
    while (!done()) {
      zmq::pollitem_t items[2] = {{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0},
                                  {static_cast<void*>(events), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, o.on_connected && !connected ? 2 : 1, std::chrono::milliseconds(100));
      auto& item = items[0];
      if (o.on_connected && !connected && (items[1].revents & ZMQ_POLLIN)) {
        zmq::message_t event, address;  // [event id, value] then the endpoint
        if (events.recv(event) && event.more() && events.recv(address)) {
          connected = true;
          o.on_connected();
        }
      }
      if (item.revents & ZMQ_POLLIN) {
        zmq::message_t topic, line;
        if (!sub.recv(topic)) continue;
        if (!topic.more() || !sub.recv(line)) continue;  // a malformed message: skip it
        const auto name = topic.to_string();
        on_line(name, line.to_string());
        ++received;
        if (auto it = per_stream.find(name); it != per_stream.end()) ++it->second;
      }
      if (o.timeout_s > 0 &&
          seconds_since(start) > o.timeout_s)
        return error{errc::io_error, "no " + wanted() + " from '" + o.endpoint + "' within " +
                                         std::to_string(o.timeout_s) + " s (got " + got() + ")"};
    }
    return received;
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot subscribe to '" + o.endpoint + "': " + e.what()};
  }
}

}  // namespace vlcache::connectors
