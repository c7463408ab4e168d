#pragma once
// Reads NumPy .npy files (format 1.0/2.0, C order, little-endian u1 or f4):
// the reference fixtures written by the Python generators under tests/.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace vlcache::test {

struct npy_array {
  std::string descr;
  std::vector<std::size_t> shape;
  std::vector<std::uint8_t> bytes;

  template <class T>
  std::vector<T> as() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

inline npy_array read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not .npy");
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    std::uint16_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 2);
    header_len = n;
  } else {
    f.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  npy_array a;
  auto field = [&](const std::string& key) {
    const auto at = header.find("'" + key + "'");
    if (at == std::string::npos) throw std::runtime_error(path + ": no " + key);
    return header.substr(header.find(':', at) + 1);
  };
  const std::string d = field("descr");
  a.descr = d.substr(d.find('\'') + 1, d.find('\'', d.find('\'') + 1) - d.find('\'') - 1);
  if (field("fortran_order").find("False") > 2) throw std::runtime_error(path + ": Fortran order");
  std::string s = field("shape");
  s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  std::stringstream ss(s);
  std::string item;
  std::size_t count = 1;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) {
      a.shape.push_back(std::stoul(item));
      count *= a.shape.back();
    }
  const std::size_t item_size = a.descr == "|u1" ? 1 : a.descr == "<f4" ? 4 : 0;
  if (item_size == 0) throw std::runtime_error(path + ": unsupported dtype " + a.descr);
  a.bytes.resize(count * item_size);
  f.read(reinterpret_cast<char*>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()));
  if (!f) throw std::runtime_error(path + ": truncated");
  return a;
}

}  // namespace vlcache::test
