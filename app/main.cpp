// vlcache: the command-line entry point; a thin layer over graph/ and core/.
#include <CLI/CLI.hpp>

#include "app/scan_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"vlcache: ask a vision-language model about live camera streams, cheaply"};
  app.require_subcommand(1);
  vlcache::app::scan_options scan;
  vlcache::app::add_scan_command(app, scan);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("scan")) return vlcache::app::run_scan(scan);
  return 2;
}
