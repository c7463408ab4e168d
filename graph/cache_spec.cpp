#include "graph/cache_spec.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/table_reader.hpp"

namespace vlcache::graph {

gate_thresholds default_gate() {
  gate_thresholds g;
  g.mad = 3.0f;
  return g;
}

gate_thresholds noise_robust_gate() {
  gate_thresholds g;
  g.mad = 2.0f;
  g.mad_cell = 4;
  g.noise_factor = 3.0f;
  return g;
}

namespace {

void read_input(table_reader& r, cache_spec& s) {
  const int size = static_cast<int>(r.integer("image_size", 16, 4096).value_or(224));
  const int patch = static_cast<int>(r.integer("patch_size", 2, 64).value_or(16));
  s.preprocess = preprocess_config::clip(size, r.boolean("pad_to_square").value_or(false));
  s.preprocess.shortest_edge =
      static_cast<int>(r.integer("shortest_edge", 16, 8192).value_or(size));
  if (s.preprocess.shortest_edge < size)
    r.fail("shortest_edge", "must be at least image_size (" + std::to_string(size) + ")");
  auto grid = patch_grid::make(size, patch);
  if (grid) s.grid = *grid;
  else r.fail("patch_size", grid.err().message);
}

void read_gate(table_reader& r, cache_spec& s, bool present) {
  gate_thresholds g;
  if (auto v = r.integer("ahash", 0, 64)) g.ahash = static_cast<int>(*v);
  if (auto v = r.integer("dhash", 0, 64)) g.dhash = static_cast<int>(*v);
  if (auto v = r.integer("phash", 0, 64)) g.phash = static_cast<int>(*v);
  if (auto v = r.number("mad", 0.0, 255.0)) g.mad = static_cast<float>(*v);
  if (auto v = r.integer("mad_cell", 1, 64)) {
    g.mad_cell = static_cast<int>(*v);
    if (!g.mad) r.fail("mad_cell", "averages the cells of the mad signature: set mad as well");
    else if (g.mad_cell > s.grid.patch_size)
      r.fail("mad_cell", "is larger than [input].patch_size (" + std::to_string(s.grid.patch_size) + ")");
  }
  if (auto v = r.number("noise_factor", 0.01, 100.0)) {
    g.noise_factor = static_cast<float>(*v);
    if (!g.mad) r.fail("noise_factor", "scales the mad threshold: set mad as well");
  }
  r.reject_unknown_keys();  // a mistyped key first: it is why no signature is set
  if (!present) g = default_gate();
  else if (!g.any() && !r.failed()) r.fail("ahash", "the gate enables no signature: set ahash, dhash, phash or mad");
  s.gate = g;
}

void read_index(table_reader& r, cache_spec& s, bool present) {
  store_budget_config c;
  c.capacity_bytes = static_cast<std::uint64_t>(
      r.number("capacity_mb", 0.001, 1 << 20).value_or(64.0) * (1 << 20));
  if (auto name = r.string("eviction")) {
    auto p = parse_eviction_policy(*name);
    if (p) c.policy = *p;
    else r.fail("eviction", p.err().message);
  }
  c.half_life = r.number("half_life", 1e-3, 1e12).value_or(100.0);
  c.hysteresis = r.number("hysteresis", 1.0, 1e6).value_or(c.hysteresis);
  if (present) s.index = c;
}

void read_views(table_reader& r, cache_spec& s, bool present) {
  view_memory_config c;
  c.max_views = static_cast<int>(r.integer("keep", 1, 64).value_or(3));
  c.cut_share = r.number("cut_share", 0.01, 1.0).value_or(c.cut_share);
  c.match_share = r.number("match_share", 0.01, 1.0).value_or(c.match_share);
  if (present) s.views = c;
}

}  // namespace

void read_cache_tables(table_reader& top, cache_spec& spec, std::vector<std::string>& errors) {
  const toml::table* input = top.table("input");
  const toml::table* gate = top.table("gate");
  const toml::table* index = top.table("index");
  table_reader in(input, "input", errors);
  read_input(in, spec);
  in.reject_unknown_keys();
  table_reader g(gate, "gate", errors);
  read_gate(g, spec, gate != nullptr);
  spec.gate_by_hand = gate != nullptr;
  spec.input_by_hand = input != nullptr;
  table_reader ix(index, "index", errors);
  read_index(ix, spec, index != nullptr);
  ix.reject_unknown_keys();
  const toml::table* views = top.table("views");
  table_reader vw(views, "views", errors);
  read_views(vw, spec, views != nullptr);
  vw.reject_unknown_keys();
}

std::optional<toml::table> parse_toml(std::string_view text, const std::string& origin,
                                      std::vector<std::string>& errors) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
       << e.description();
    errors.push_back(os.str());
    return std::nullopt;
  }
}

std::optional<std::string> read_text_file(const std::string& path, std::vector<std::string>& errors) {
  std::ifstream f(path);
  if (!f) {
    errors.push_back(path + ": cannot open the config file " + std::filesystem::absolute(path).string());
    return std::nullopt;
  }
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

spec_result parse_cache_spec(std::string_view text, const std::string& origin) {
  spec_result out;
  auto root = parse_toml(text, origin, out.errors);
  if (!root) return out;
  table_reader top(&*root, "", out.errors);
  read_cache_tables(top, out.spec, out.errors);
  top.reject_unknown_keys();
  place_errors(*root, origin, out.errors);
  return out;
}

spec_result load_cache_spec(const std::string& path) {
  spec_result out;
  auto text = read_text_file(path, out.errors);
  return text ? parse_cache_spec(*text, path) : out;
}

}  // namespace vlcache::graph
