#include "graph/table_reader.hpp"

#include <cmath>
#include <sstream>

namespace vlcache::graph {

table_reader::table_reader(const toml::table* table, std::string path,
                           std::vector<std::string>& errors)
    : table_(table), path_(std::move(path)), errors_(errors) {}

std::string table_reader::key_name(const std::string& key) const {
  return path_.empty() ? key : "[" + path_ + "]." + key;
}

void table_reader::fail(const std::string& key, const std::string& what) {
  ++failures_;
  errors_.push_back(key_name(key) + ": " + what);
}

const toml::node* table_reader::get(const std::string& key) {
  seen_.insert(key);
  return table_ == nullptr ? nullptr : table_->get(key);
}

namespace {
std::string shown(const toml::node& n) {
  std::ostringstream os;
  n.visit([&](auto&& v) { os << v; });
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

const toml::table* table_reader::table(const std::string& key) {
  const toml::node* n = get(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) {
    fail(key, "expected a table");
    return nullptr;
  }
  return n->as_table();
}

void table_reader::mark_known(const std::string& key) { seen_.insert(key); }

void table_reader::reject_unknown_keys() {
  if (table_ == nullptr) return;
  for (const auto& [k, v] : *table_) {
    const std::string key(k.str());
    if (seen_.count(key) == 0) fail(key, "unknown key");
  }
}

}  // namespace vlcache::graph
