#include "connectors/curve_auth.hpp"

#include <cstdio>
#include <vector>

#include "core/base/elapsed.hpp"
#include "core/base/log_budget.hpp"
#include "core/base/stream_name.hpp"

namespace vlcache::connectors {
namespace {

std::atomic<std::uint64_t> refused_total{0};

}  // namespace

std::uint64_t curve_refused_total() noexcept { return refused_total.load(); }

zap_authenticator::zap_authenticator(zmq::context_t& ctx, const std::vector<std::string>& allowed, std::string what)
    : socket_(ctx, zmq::socket_type::rep), allowed_(allowed.begin(), allowed.end()), what_(std::move(what)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind("inproc://zeromq.zap.01");  // the address libzmq asks (RFC 27)
  thread_ = std::thread([this] { serve(); });
}

zap_authenticator::~zap_authenticator() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void zap_authenticator::serve() {
  log_budget log_lines;
  const auto started = steady_clock::now();
  while (!stop_) {
    zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      // version, request id, domain, address, identity, mechanism, credentials...
      std::vector<zmq::message_t> parts;
      do {
        parts.emplace_back();
        if (!socket_.recv(parts.back())) break;
      } while (parts.back().more());
      if (parts.size() < 6) continue;  // not a ZAP request: nothing sensible to answer
      const std::string address = parts[3].to_string(), mechanism = parts[5].to_string();
      std::string key;
      bool ok = false;
      if (mechanism == "CURVE" && parts.size() >= 7 && parts[6].size() == 32) {
        char z85[41];
        if (zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[6].data()), 32) != nullptr) key = z85;
        ok = allowed_.count(key) > 0;
      }
      if (!ok) {
        ++refused_total;
        // A flood of unknown keys writes the first few lines, then one per 10 s.
        if (auto line = log_lines.note("refused", seconds_since(started)))
          std::fprintf(stderr, "%s: refused peer %s (%s key %s)%s\n", what_.c_str(), printable(address).c_str(),
                       printable(mechanism).c_str(), key.empty() ? "-" : key.c_str(),
                       line->suppressed
                           ? (" (" + std::to_string(line->suppressed) + " more refusals not logged)").c_str()
                           : "");
      }
      const std::string code = ok ? "200" : "400", text = ok ? "OK" : "unknown client key";
      socket_.send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
      socket_.send(parts[1], zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(code), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(key), zmq::send_flags::sndmore);  // user id
      socket_.send(zmq::buffer(std::string()), zmq::send_flags::none);
    } catch (const zmq::error_t&) {
      if (stop_) break;
    }
  }
}

void make_curve_server(zmq::socket_t& socket, const curve_server_keys& keys) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys.own.secret_key);
  socket.set(zmq::sockopt::zap_domain, "vlcache");
}

void make_curve_client(zmq::socket_t& socket, const curve_client_keys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public);
  socket.set(zmq::sockopt::curve_publickey, keys.own.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.own.secret_key);
}

}  // namespace vlcache::connectors
