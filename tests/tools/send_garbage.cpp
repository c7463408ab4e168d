// Sends what an attacker sends to a pipeline's ingest. The pipeline must
// count it, bound what it costs, and carry on.
//   send_garbage ENDPOINT            random bytes, a truncated frame, a wrong
//                                    version, an undecodable JPEG, an oversized message
//   send_garbage ENDPOINT slots N    N undecodable JPEGs, each under a new stream name
//   send_garbage ENDPOINT bomb N     N JPEGs of 4096x4096 pixels under a 64x48 header
//   send_garbage ENDPOINT flood N    N malformed messages, each with its own error text
//   send_garbage ENDPOINT badname    frames named with bytes that are not UTF-8, a
//                                    newline, an escape
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <zmq.hpp>

#include "connectors/frame_decoder.hpp"
#include "connectors/wire_format.hpp"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argc > 2 ? argv[2] : "mixed";
  const int n = argc > 3 ? std::atoi(argv[3]) : 1;
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 10000);
  push.set(zmq::sockopt::sndhwm, 100000);
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
  if (mode == "slots") {
    for (int i = 0; i < n; ++i) {
      f.stream = "undecodable" + std::to_string(i);
      send(encode_wire(f));
    }
  } else if (mode == "bomb") {
    // A black 4096x4096 JPEG is a few hundred KiB; decoded it is 48 MiB.
    std::vector<std::uint8_t> black(4096u * 4096u * 3u, 0);
    const vlcache::image_view big{black.data(), 4096, 4096, 3, 1, 0, vlcache::channel_order::bgr};
    auto jpeg = encode_jpeg(big, 50);
    if (!jpeg) return 1;
    f.stream = "bomb";
    f.width = 64;
    f.height = 48;
    f.payload = *jpeg;
    for (int i = 0; i < n; ++i) send(encode_wire(f));
  } else if (mode == "flood") {
    for (int i = 0; i < n; ++i) {
      auto m = good_shape;
      m[4] = static_cast<std::uint8_t>(2 + i % 250);  // "version N": a different text for each
      m[5] = static_cast<std::uint8_t>(i / 250);
      send(m);
    }
  } else if (mode == "badname") {
    for (const std::string name : {std::string("cam\xff"), std::string("a\nrunning: forged"), std::string("x\x1b[2J")}) {
      f.stream = name;
      send(encode_wire(f));
    }
  } else {
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
  }
  std::printf("sent %d %s messages\n", sent, mode.c_str());
  return 0;
}
