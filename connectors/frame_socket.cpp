#include "connectors/frame_socket.hpp"

#include <zmq.hpp>

#include "connectors/curve_auth.hpp"

namespace vlcache::connectors {

struct frame_puller::impl {
  zmq::context_t ctx;
  std::unique_ptr<zap_authenticator> auth;  // after the context, before the socket
  zmq::socket_t pull{ctx, zmq::socket_type::pull};
};

frame_puller::frame_puller(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
frame_puller::~frame_puller() = default;

expected<std::unique_ptr<frame_puller>> frame_puller::open(const std::string& endpoint, bool bind,
                                                           const std::optional<curve_server_keys>& curve,
                                                           std::uint64_t max_message_bytes) {
  auto p = std::make_unique<impl>();
  try {
    if (curve) {
      p->auth = std::make_unique<zap_authenticator>(p->ctx, curve->allowed, "ingest " + endpoint);
      make_curve_server(p->pull, *curve);
    }
    p->pull.set(zmq::sockopt::linger, 0);
    p->pull.set(zmq::sockopt::rcvhwm, 64);  // bounded: camera nodes block or drop when we fall behind
    // libzmq drops the connection of a peer whose message is larger, before
    // allocating it: a 1 GiB message costs nothing.
    p->pull.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(max_message_bytes));
    if (bind) p->pull.bind(endpoint);
    else p->pull.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return error{errc::io_error,
                 "cannot " + std::string(bind ? "bind" : "connect") + " '" + endpoint + "': " + e.what()};
  }
  return std::unique_ptr<frame_puller>(new frame_puller(std::move(p)));
}

std::vector<pulled_frame> frame_puller::receive(std::chrono::milliseconds timeout, int max, const admission& admit) {
  std::vector<pulled_frame> out;
  zmq::pollitem_t item{static_cast<void*>(impl_->pull), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, timeout);
  for (int n = 0; n < max && (item.revents & ZMQ_POLLIN); ++n) {
    zmq::message_t msg;
    if (!impl_->pull.recv(msg, zmq::recv_flags::dontwait)) break;
    std::string peer, identity;
    try {
      if (const char* p = msg.gets("Peer-Address")) peer = p;
    } catch (const zmq::error_t&) {
      // not every transport knows its peer
    }
    try {
      if (const char* u = msg.gets("User-Id")) identity = u;  // the ZAP handler's answer: the client's key
    } catch (const zmq::error_t&) {
      // no ZAP on this socket
    }
    if (identity.empty()) identity = peer;
    std::string refused = admit ? admit(identity, msg.size()) : std::string();
    auto frame = refused.empty() ? decode_wire(static_cast<const std::uint8_t*>(msg.data()), msg.size())
                                 : expected<wire_frame>(error{errc::capacity, refused});
    out.push_back({std::move(frame), std::move(peer), std::move(identity), msg.size(), std::move(refused)});
  }
  return out;
}

struct frame_pusher::impl {
  zmq::context_t ctx;
  zmq::socket_t push{ctx, zmq::socket_type::push};
};

frame_pusher::frame_pusher(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
frame_pusher::~frame_pusher() = default;

expected<std::unique_ptr<frame_pusher>> frame_pusher::connect(const std::string& endpoint,
                                                              const std::optional<curve_client_keys>& curve) {
  auto p = std::make_unique<impl>();
  try {
    if (curve) make_curve_client(p->push, *curve);
    p->push.set(zmq::sockopt::sndhwm, 8);
    p->push.set(zmq::sockopt::linger, 2000);
    p->push.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot connect to '" + endpoint + "': " + e.what()};
  }
  return std::unique_ptr<frame_pusher>(new frame_pusher(std::move(p)));
}

bool frame_pusher::send(const std::vector<std::uint8_t>& message) {
  return static_cast<bool>(impl_->push.send(zmq::buffer(message), zmq::send_flags::dontwait));
}

}  // namespace vlcache::connectors
