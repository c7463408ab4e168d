#include "connectors/zmq_listener.hpp"

#include <chrono>
#include <zmq.hpp>

namespace vlcache::connectors {

expected<int> listen(const listen_options& o,
                     const std::function<void(const std::string&, const std::string&)>& on_line) {
  try {
    zmq::context_t ctx;
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, o.stream);
    sub.connect(o.endpoint);
    const auto start = std::chrono::steady_clock::now();
    int received = 0;
    while (o.count == 0 || received < o.count) {
      zmq::pollitem_t item{static_cast<void*>(sub), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (item.revents & ZMQ_POLLIN) {
        zmq::message_t topic, line;
        if (!sub.recv(topic)) continue;
        if (!topic.more() || !sub.recv(line)) continue;  // a malformed message: skip it
        on_line(topic.to_string(), line.to_string());
        ++received;
      }
      if (o.timeout_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.timeout_s)
        return error{errc::io_error, "no " + std::to_string(o.count) + " messages from '" + o.endpoint +
                                         "' within " + std::to_string(o.timeout_s) + " s (got " +
                                         std::to_string(received) + ")"};
    }
    return received;
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot subscribe to '" + o.endpoint + "': " + e.what()};
  }
}

}  // namespace vlcache::connectors
