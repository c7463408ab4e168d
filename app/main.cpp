// vlcache: the command-line entry point; a thin layer over the libraries.
#include <CLI/CLI.hpp>

#include "app/bench_encoder.hpp"
#include "app/encode_command.hpp"
#include "app/scan_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"vlcache: ask a vision-language model about live camera streams, cheaply"};
  app.require_subcommand(1);
  vlcache::app::scan_options scan;
  vlcache::app::add_scan_command(app, scan);
  vlcache::app::encode_options encode;
  vlcache::app::add_encode_command(app, encode);
  auto* bench = app.add_subcommand("bench", "Benchmarks on real video (programs, not tests)");
  bench->require_subcommand(1);
  vlcache::app::bench_encoder_options bench_encoder;
  vlcache::app::add_bench_encoder_command(*bench, bench_encoder);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("scan")) return vlcache::app::run_scan(scan);
  if (app.got_subcommand("encode")) return vlcache::app::run_encode(encode);
  if (bench->got_subcommand("encoder")) return vlcache::app::run_bench_encoder(bench_encoder);
  return 2;
}
