// Sends malformed messages to a pipeline's ingest: random bytes, a
// truncated frame, a wrong magic, a wrong version, an oversized message, a
// JPEG that does not decode. The pipeline must count them and carry on.
#include <cstdio>
#include <random>
#include <zmq.hpp>

#include "connectors/wire_format.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 5000);
  push.connect(argv[1]);
  using namespace vlcache::connectors;
  wire_frame f;
  f.stream = "garbage";
  f.width = 8;
  f.height = 8;
  f.encoding = frame_encoding::jpeg;
  f.payload.assign(100, 0x42);  // not a JPEG
  const auto good_shape = encode_wire(f);
  std::mt19937 rng(1);
  int sent = 0;
  auto send = [&](const std::vector<std::uint8_t>& m) {
    if (push.send(zmq::buffer(m), zmq::send_flags::none)) ++sent;
  };
  for (int i = 0; i < 5; ++i) {
    std::vector<std::uint8_t> junk(1 + rng() % 300);
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    send(junk);
  }
  send({good_shape.begin(), good_shape.begin() + 30});  // truncated
  auto bad = good_shape;
  bad[4] = 7;  // version
  send(bad);
  send(good_shape);  // undecodable JPEG
  send(std::vector<std::uint8_t>(max_wire_bytes + 16, 0));  // oversized
  std::printf("sent %d malformed messages\n", sent);
  return 0;
}
