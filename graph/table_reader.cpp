#include "graph/table_reader.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "graph/did_you_mean.hpp"

namespace vlcache::graph {

table_reader::table_reader(const toml::table* table, std::string path,
                           std::vector<std::string>& errors, std::filesystem::path base)
    : table_(table), path_(std::move(path)), errors_(errors), base_(std::move(base)) {}

std::string table_reader::key_name(const std::string& key) const {
  return path_.empty() ? key : "[" + path_ + "]." + key;
}

std::string table_reader::where(const std::string& key) const {
  if (table_ == nullptr) return "";
  const toml::node* n = table_->get(key);
  const toml::source_region& at = n != nullptr ? n->source() : table_->source();
  if (at.path == nullptr || at.begin.line == 0) return "";
  return *at.path + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column) + ": ";
}

void table_reader::fail(const std::string& key, const std::string& what) {
  ++failures_;
  errors_.push_back(where(key) + key_name(key) + ": " + what);
}

const toml::node* table_reader::get(const std::string& key) {
  seen_.insert(key);
  return table_ == nullptr ? nullptr : table_->get(key);
}

namespace {
/// What a value is and says, as the error names it: the string "4", the
/// integer 4, an array.
std::string shown(const toml::node& n) {
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  std::ostringstream os;
  if (n.is_string()) os << "the string \"" << *n.value_exact<std::string>() << "\"";
  else if (n.is_integer()) os << "the integer " << *n.value_exact<std::int64_t>();
  else if (n.is_floating_point()) os << "the number " << *n.value_exact<double>();
  else if (n.is_boolean()) os << "the boolean " << (*n.value_exact<bool>() ? "true" : "false");
  else {
    os << "the date or time ";
    n.visit([&](auto&& v) { os << v; });
  }
  return os.str();
}
}  // namespace

std::optional<std::int64_t> table_reader::integer(const std::string& key, std::int64_t lo,
                                                  std::int64_t hi) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  auto v = n->value_exact<std::int64_t>();
  if (!v) {
    fail(key, "expected an integer, got " + shown(*n));
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    fail(key, std::to_string(*v) + " is outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<double> table_reader::number(const std::string& key, double lo, double hi) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  std::optional<double> v;
  if (n->is_floating_point()) v = n->value_exact<double>();
  else if (n->is_integer()) v = static_cast<double>(*n->value_exact<std::int64_t>());
  if (!v || !std::isfinite(*v)) {
    fail(key, "expected a number, got " + shown(*n));
    return std::nullopt;
  }
  if (*v < lo || *v > hi) {
    std::ostringstream os;
    os << *v << " is outside [" << lo << ", " << hi << "]";
    fail(key, os.str());
    return std::nullopt;
  }
  return v;
}

std::optional<bool> table_reader::boolean(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  auto v = n->value_exact<bool>();
  if (!v) fail(key, "expected true or false, got " + shown(*n));
  return v;
}

std::optional<std::string> table_reader::string(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return std::nullopt;
  auto v = n->value_exact<std::string>();
  if (!v) fail(key, "expected a string, got " + shown(*n));
  return v;
}

std::vector<std::string> table_reader::strings(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return {};
  if (auto v = n->value_exact<std::string>()) return {*v};
  std::vector<std::string> out;
  const toml::array* a = n->as_array();
  if (a != nullptr)
    for (const auto& e : *a)
      if (auto v = e.value_exact<std::string>()) out.push_back(*v);
  if (a == nullptr || out.size() != a->size()) fail(key, "expected a string or an array of strings, got " + shown(*n));
  return out;
}

std::optional<std::string> table_reader::path(const std::string& key) {
  auto v = string(key);
  if (!v || v->empty()) return v;
  std::filesystem::path p(*v);
  if (p.is_relative() && !base_.empty()) p = base_ / p;
  return std::filesystem::absolute(p).lexically_normal().string();
}

const toml::table* table_reader::table(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) {
    fail(key, "expected a table, got " + shown(*n));
    return nullptr;
  }
  return n->as_table();
}

void table_reader::mark_known(const std::string& key) { seen_.insert(key); }

void table_reader::reject_unknown_keys() {
  if (table_ == nullptr) return;
  const std::vector<std::string> known(seen_.begin(), seen_.end());
  for (const auto& [k, v] : *table_) {
    const std::string key(k.str());
    if (seen_.count(key) == 0) fail(key, "unknown key" + did_you_mean(key, known));
  }
}

namespace {
/// The node an error's key names: "[camera[1]].source", "[gate].mad", "[llm]".
const toml::node* named_node(const toml::table& root, const std::string& error) {
  static const std::regex key(R"(^\[([A-Za-z_]+)(?:\[(\d+)\])?\](?:\.([A-Za-z_]+))?)");
  std::smatch m;
  if (!std::regex_search(error, m, key)) return nullptr;
  const toml::node* n = root.get(m[1].str());
  if (n != nullptr && m[2].matched) {
    const toml::array* a = n->as_array();
    n = a == nullptr ? nullptr : a->get(std::stoul(m[2].str()));
  }
  if (n != nullptr && m[3].matched) {
    const toml::table* t = n->as_table();
    const toml::node* child = t == nullptr ? nullptr : t->get(m[3].str());
    if (child != nullptr) n = child;  // an absent key: the table that lacks it
  }
  return n;
}
}  // namespace

void place_errors(const toml::table& root, const std::string& origin, std::vector<std::string>& errors) {
  for (auto& e : errors) {
    if (e.rfind(origin + ":", 0) == 0) continue;
    const toml::node* n = named_node(root, e);
    if (n != nullptr && n->source().begin.line > 0)
      e = origin + ":" + std::to_string(n->source().begin.line) + ":" +
          std::to_string(n->source().begin.column) + ": " + e;
    else
      e = origin + ": " + e;
  }
  std::stable_partition(errors.begin(), errors.end(),
                        [](const std::string& e) { return e.find(": unknown key") != std::string::npos; });
}

}  // namespace vlcache::graph
