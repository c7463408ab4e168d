#include "graph/sink_registry.hpp"

#include <filesystem>

namespace vlcache::graph {
namespace {

std::string option(const sink_spec& s, const std::string& key) {
  auto it = s.options.find(key);
  return it == s.options.end() ? std::string() : it->second;
}

std::vector<sink_kind_info> make_registry() {
  std::vector<sink_kind_info> kinds;
  kinds.push_back({"console", "answers on standard output, one readable line each",
                   {{"show", "answers (default), frames (answer and frame lines) or json (every line as JSON)",
                     "answers", false}},
                   [](const sink_spec& s, const std::string& where) {
                     std::vector<std::string> errors;
                     const auto show = option(s, "show");
                     if (!show.empty() && !connectors::parse_console_show(show))
                       errors.push_back(where + "show: '" + show + "' (answers, frames or json)");
                     return errors;
                   },
                   [](const sink_spec& s, const auto&) -> expected<std::unique_ptr<connectors::line_sink>> {
                     const auto show = option(s, "show");
                     return connectors::make_console_sink(
                         show.empty() ? connectors::console_show::answers : *connectors::parse_console_show(show));
                   }});
  kinds.push_back({"jsonl", "one JSON line per frame appended to a file",
                   {{"path", "the output file (its folder must exist)", "", true}},
                   [](const sink_spec& s, const std::string& where) {
                     std::vector<std::string> errors;
                     const auto path = option(s, "path");
                     if (path.empty()) {
                       errors.push_back(where + "path: a jsonl sink needs a path");
                     } else {
                       const auto dir = std::filesystem::path(path).parent_path();
                       if (!dir.empty() && !std::filesystem::is_directory(dir))
                         errors.push_back(where + "path: folder '" + dir.string() + "' does not exist");
                     }
                     return errors;
                   },
                   [](const sink_spec& s, const auto&) { return connectors::make_jsonl_sink(option(s, "path")); }});
  kinds.push_back({"zmq", "ZeroMQ PUB socket: topic = stream name, payload = the JSON line",
                   {{"endpoint", "where to bind, tcp://HOST:PORT", "", true}},
                   [](const sink_spec& s, const std::string& where) {
                     std::vector<std::string> errors;
                     const auto e = option(s, "endpoint");
                     if (e.find("://") == std::string::npos)
                       errors.push_back(where + "endpoint: '" + e + "' is not a ZeroMQ endpoint (tcp://HOST:PORT)");
                     return errors;
                   },
                   [](const sink_spec& s, const std::optional<connectors::curve_server_keys>& curve) {
                     return connectors::make_zmq_sink(option(s, "endpoint"), curve);
                   }});
  return kinds;
}

}  // namespace

const std::vector<sink_kind_info>& sink_kinds() {
  static const std::vector<sink_kind_info> kinds = make_registry();
  return kinds;
}

const sink_kind_info* find_sink_kind(const std::string& name) {
  for (const auto& k : sink_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::string sink_kind_names() {
  std::string s;
  const auto& kinds = sink_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i)
    s += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + kinds[i].name;
  return s;
}

}  // namespace vlcache::graph
