#include "connectors/curve_keys.hpp"

#include <sys/stat.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vlcache::connectors {
namespace {

constexpr std::size_t z85_key_length = 40;

bool is_z85_key(const std::string& k) {
  if (k.size() != z85_key_length) return false;
  std::uint8_t bin[32];
  return zmq_z85_decode(bin, k.c_str()) != nullptr;
}

/// Lines `name = "value"` (comments and blank lines skipped).
expected<std::vector<std::pair<std::string, std::string>>> read_assignments(const std::string& path) {
  std::ifstream f(path);
  if (!f) return error{errc::not_found, "cannot read key file '" + path + "': " + std::strerror(errno)};
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  int number = 0;
  while (std::getline(f, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto eq = line.find('=');
    const auto open = line.find('"', eq == std::string::npos ? 0 : eq);
    const auto close = open == std::string::npos ? open : line.find('"', open + 1);
    if (eq == std::string::npos || open == std::string::npos || close == std::string::npos)
      return error{errc::invalid_argument,
                   path + ":" + std::to_string(number) + ": expected name = \"Z85 key\""};
    std::string name = line.substr(first, eq - first);
    name.erase(name.find_last_not_of(" \t") + 1);
    out.emplace_back(name, line.substr(open + 1, close - open - 1));
  }
  return out;
}

expected<std::string> key_named(const std::string& path, const std::string& name) {
  auto a = read_assignments(path);
  if (!a) return a.err();
  for (const auto& [n, v] : *a)
    if (n == name) {
      if (!is_z85_key(v)) return error{errc::invalid_argument, path + ": " + name + " is not a 40-character Z85 key"};
      return v;
    }
  return error{errc::invalid_argument, path + ": no " + name + " in the file"};
}

}  // namespace

bool curve_available() noexcept { return zmq_has("curve") != 0; }

expected<curve_key_pair> generate_key_pair() {
  if (!curve_available()) return error{errc::invalid_config, "this libzmq has no CURVE support"};
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    return error{errc::io_error, std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno())};
  return curve_key_pair{pub, sec};
}

status write_key_pair(const curve_key_pair& pair, const std::string& stem) {
  const std::string key = stem + ".key", pub = stem + ".pub";
  if (std::filesystem::exists(key)) return error{errc::invalid_argument, "'" + key + "' exists: not overwritten"};
  {
    // Created with the owner's permissions only, before the secret is written.
    const mode_t old = ::umask(077);
    std::ofstream f(key);
    ::umask(old);
    if (!f) return error{errc::io_error, "cannot write '" + key + "': " + std::strerror(errno)};
    f << "# vlcache CURVE key pair: keep this file secret\npublic-key = \"" << pair.public_key
      << "\"\nsecret-key = \"" << pair.secret_key << "\"\n";
    if (!f) return error{errc::io_error, "cannot write '" + key + "'"};
  }
  std::ofstream f(pub);
  if (!f) return error{errc::io_error, "cannot write '" + pub + "': " + std::strerror(errno)};
  f << "# vlcache CURVE public key\npublic-key = \"" << pair.public_key << "\"\n";
  if (!f) return error{errc::io_error, "cannot write '" + pub + "'"};
  return {};
}

expected<curve_key_pair> read_key_pair(const std::string& path) {
  // A secret others can read is no longer secret: refused, as ssh refuses such a key.
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto perms = fs::status(path, ec).permissions();
  if (!ec && (perms & (fs::perms::group_all | fs::perms::others_all)) != fs::perms::none) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(perms) & 07777u);
    return error{errc::invalid_argument, "secret key file " + fs::absolute(path).string() + " is open to others (mode " +
                                             mode + "): chmod 600 it"};
  }
  auto pub = key_named(path, "public-key");
  if (!pub) return pub.err();
  auto sec = key_named(path, "secret-key");
  if (!sec) return sec.err();
  return curve_key_pair{*pub, *sec};
}

expected<std::string> read_public_key(const std::string& path) { return key_named(path, "public-key"); }

expected<std::vector<std::string>> read_allowed_keys(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> keys;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".pub") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto k = read_public_key(f);
      if (!k) return k.err();
      keys.push_back(*k);
    }
  } else {
    auto a = read_assignments(path);
    if (!a) return a.err();
    for (const auto& [n, v] : *a) {
      if (n != "public-key") continue;
      if (!is_z85_key(v)) return error{errc::invalid_argument, path + ": a public-key is not a 40-character Z85 key"};
      keys.push_back(v);
    }
  }
  if (keys.empty()) return error{errc::invalid_argument, "'" + path + "' allows no client key (*.pub files or public-key lines)"};
  return keys;
}

namespace {

/// "a, b ,c" -> {a, b, c}
std::set<std::string> stream_list(const std::string& v) {
  std::set<std::string> out;
  std::size_t at = 0;
  while (at <= v.size()) {
    const auto comma = std::min(v.find(',', at), v.size());
    auto name = v.substr(at, comma - at);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) out.insert(name);
    at = comma + 1;
  }
  return out;
}

}  // namespace

expected<std::map<std::string, std::set<std::string>>> read_allowed_streams(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::map<std::string, std::set<std::string>> out;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".pub") files.push_back(e.path().string());
  } else {
    files.push_back(path);
  }
  for (const auto& f : files) {
    auto a = read_assignments(f);
    if (!a) return a.err();
    std::string key;  // the entry a streams line belongs to: the public-key line above it
    for (const auto& [n, v] : *a) {
      if (n == "public-key") key = v;
      else if (n == "streams" && key.empty())
        return error{errc::invalid_argument, f + ": a streams line before any public-key line"};
      else if (n == "streams") out[key] = stream_list(v);
    }
  }
  return out;
}

}  // namespace vlcache::connectors
