// Example 4: consume a pipeline's results over ZeroMQ from C++.
//
// Subscribes to a pipeline's zmq sink ([[sink]] kind = "zmq") and prints,
// per stream, the frame number and how many tokens had to be recomputed.
//
//   build/examples/04_answer_consumer tcp://127.0.0.1:5556 [STREAM] [COUNT]

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "connectors/zmq_listener.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ENDPOINT [STREAM] [COUNT]\n", argv[0]);
    return 2;
  }
  vlcache::connectors::listen_options o;
  o.endpoint = argv[1];
  if (argc > 2) o.streams = {argv[2]};
  o.count = argc > 3 ? std::atoi(argv[3]) : 0;
  auto n = vlcache::connectors::listen(o, [](const std::string& stream, const std::string& line) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) return;
    std::printf("%-10s frame %5llu: %3d of %d tokens recomputed, %.1f ms end to end\n", stream.c_str(),
                j.value("seq", 0ull), j.value("tokens_computed", 0), j.value("tokens", 0),
                j["latency_ms"].value("total", 0.0));
  });
  if (!n) {
    std::fprintf(stderr, "%s\n", n.err().message.c_str());
    return 1;
  }
  return 0;
}
