#include "connectors/request_endpoint.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "connectors/curve_auth.hpp"
#include "connectors/zmq_endpoint.hpp"
#include "core/base/duration_text.hpp"

namespace vlcache::connectors {

expected<std::unique_ptr<request_server>> request_server::start(const std::string& endpoint, handler h,
                                                                const std::optional<curve_server_keys>& curve,
                                                                std::size_t max_question_bytes) {
  std::unique_ptr<request_server> s(new request_server());
  s->handler_ = std::move(h);
  s->max_question_bytes_ = max_question_bytes;
  try {
    auto ctx = std::make_shared<zmq::context_t>();
    if (curve) s->auth_ = std::make_shared<zap_authenticator>(*ctx, curve->allowed, "request endpoint " + endpoint);
    auto rep = std::make_shared<zmq::socket_t>(*ctx, zmq::socket_type::rep);
    rep->set(zmq::sockopt::linger, 0);
    // A question is a few hundred bytes: a larger request drops its sender
    // before libzmq allocates it.
    rep->set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(max_question_bytes + 4096));
    if (curve) make_curve_server(*rep, *curve);
    rep->bind(endpoint);
    s->socket_ = rep;
    s->context_ = ctx;
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot bind the request endpoint '" + endpoint + "': " + e.what()};
  }
  s->thread_ = std::thread([raw = s.get()] { raw->serve(raw->socket_.get()); });
  return s;
}

request_server::~request_server() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  socket_.reset();  // before the authenticator and the context
  auth_.reset();
  context_.reset();
}

void request_server::serve(void* socket) {
  auto& rep = *static_cast<zmq::socket_t*>(socket);
  while (!stop_) {
    zmq::pollitem_t item{static_cast<void*>(rep), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t msg;
      if (!rep.recv(msg)) continue;
      const std::string text = msg.to_string();
      while (msg.more() && rep.recv(msg)) {
      }  // a multi-part request: only the first part counts
      std::string reply;
      try {
        const auto j = nlohmann::json::parse(text);
        if (!j.is_object() || !j.contains("stream") || !j["stream"].is_string())
          reply = nlohmann::json{{"error", "request: \"stream\" (a string) is missing"}}.dump();
        else if (!j.contains("question") || !j["question"].is_string() || j["question"].get<std::string>().empty())
          reply = nlohmann::json{{"error", "request: \"question\" (a non-empty string) is missing"}}.dump();
        else if (j["question"].get_ref<const std::string&>().size() > max_question_bytes_)
          reply = nlohmann::json{{"error", "request: \"question\" is longer than " +
                                               std::to_string(max_question_bytes_) + " bytes ([llm].max_question_bytes)"}}
                      .dump();
        else
          reply = handler_(j["stream"].get<std::string>(), j["question"].get<std::string>());
      } catch (const nlohmann::json::exception& e) {
        // The parser's message quotes the bytes it choked on, which need not be
        // UTF-8: replaced, or dump() throws and the endpoint's thread dies.
        reply = nlohmann::json{{"error", std::string("request is not JSON: ") + e.what()}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      if (reply.rfind("{\"error\"", 0) == 0) ++rejected_;
      else ++served_;
      rep.send(zmq::buffer(reply), zmq::send_flags::none);
    } catch (const zmq::error_t&) {
      if (stop_) break;
    }
  }
}

expected<std::string> ask_endpoint(const std::string& address, const std::string& stream, const std::string& question,
                                   double timeout_s, const std::optional<curve_client_keys>& curve,
                                   double connect_timeout_s) {
  const std::string endpoint = zmq_endpoint(address);
  try {
    zmq::context_t ctx;
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.set(zmq::sockopt::maxmsgsize, std::int64_t{16} << 20);  // an answer line is small
    if (curve) make_curve_client(req, *curve);
    if (auto st = connect_and_handshake(ctx, req, endpoint, connect_timeout_s); !st) return st.err();
    const std::string body = nlohmann::json{{"stream", stream}, {"question", question}}.dump();
    req.send(zmq::buffer(body), zmq::send_flags::none);
    zmq::pollitem_t item{static_cast<void*>(req), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(timeout_s * 1000)));
    if (!(item.revents & ZMQ_POLLIN))
      return error{errc::io_error, "no reply from " + endpoint + " within " + duration_text(timeout_s) +
                                       " (connected; the pipeline may be busy: --timeout-s waits longer)"};
    zmq::message_t reply;
    if (!req.recv(reply)) return error{errc::io_error, "no reply from " + endpoint};
    return reply.to_string();
  } catch (const zmq::error_t& e) {
    return error{errc::io_error, "cannot ask " + endpoint + ": " + e.what()};
  }
}

}  // namespace vlcache::connectors
