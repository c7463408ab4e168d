#include "core/models/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace vlcache {
namespace {

constexpr std::uint64_t max_header_bytes = 100ull << 20;

error file_error(const std::string& path, const std::string& what) {
  return error{errc::io_error, path + ": " + what};
}

bool parse_dtype(const std::string& s, tensor_dtype& out) {
  static const std::map<std::string, tensor_dtype> names{
      {"F64", tensor_dtype::f64},   {"F32", tensor_dtype::f32},     {"F16", tensor_dtype::f16},
      {"BF16", tensor_dtype::bf16}, {"I64", tensor_dtype::i64},     {"I32", tensor_dtype::i32},
      {"I16", tensor_dtype::i16},   {"I8", tensor_dtype::i8},       {"U8", tensor_dtype::u8},
      {"BOOL", tensor_dtype::boolean}, {"F8_E4M3", tensor_dtype::f8_e4m3},
      {"F8_E5M2", tensor_dtype::f8_e5m2}};
  auto it = names.find(s);
  if (it == names.end()) return false;
  out = it->second;
  return true;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 1;
      while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
      mant &= 0x3ffu;
      bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

const char* to_string(tensor_dtype t) noexcept {
  switch (t) {
    case tensor_dtype::f64: return "F64";
    case tensor_dtype::f32: return "F32";
    case tensor_dtype::f16: return "F16";
    case tensor_dtype::bf16: return "BF16";
    case tensor_dtype::i64: return "I64";
    case tensor_dtype::i32: return "I32";
    case tensor_dtype::i16: return "I16";
    case tensor_dtype::i8: return "I8";
    case tensor_dtype::u8: return "U8";
    case tensor_dtype::boolean: return "BOOL";
    case tensor_dtype::f8_e4m3: return "F8_E4M3";
    case tensor_dtype::f8_e5m2: return "F8_E5M2";
  }
  return "?";
}

std::size_t item_size(tensor_dtype t) noexcept {
  switch (t) {
    case tensor_dtype::f64: case tensor_dtype::i64: return 8;
    case tensor_dtype::f32: case tensor_dtype::i32: return 4;
    case tensor_dtype::f16: case tensor_dtype::bf16: case tensor_dtype::i16: return 2;
    default: return 1;
  }
}

std::int64_t tensor_info::numel() const noexcept {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

safetensors_file::~safetensors_file() {
  if (map_ != nullptr) munmap(map_, map_size_);
}

expected<std::shared_ptr<const safetensors_file>> safetensors_file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error{errc::not_found, path + ": cannot open (" + std::strerror(errno) + ")"};
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return file_error(path, "cannot stat");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return file_error(path, "truncated: " + std::to_string(size) + " bytes, no header length");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return file_error(path, "cannot map the file");
  std::shared_ptr<safetensors_file> f(new safetensors_file());
  f->path_ = path;
  f->map_ = map;
  f->map_size_ = size;
  const auto* bytes = static_cast<const std::uint8_t*>(map);

  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len == 0 || header_len > max_header_bytes || header_len > size - 8)
    return file_error(path, "header length " + std::to_string(header_len) +
                                " does not fit the file of " + std::to_string(size) + " bytes");
  const std::uint64_t data_size = size - 8 - header_len;
  f->data_ = bytes + 8 + header_len;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    return file_error(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return file_error(path, "header is not a JSON object");

  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") continue;
    const auto& e = it.value();
    auto bad = [&](const std::string& what) { return file_error(path, "tensor '" + name + "': " + what); };
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      return bad("entry needs dtype, shape and data_offsets");
    tensor_info t;
    t.name = name;
    if (!e["dtype"].is_string() || !parse_dtype(e["dtype"].get<std::string>(), t.dtype))
      return bad("unknown dtype " + e["dtype"].dump());
    if (!e["shape"].is_array()) return bad("shape is not an array");
    for (const auto& d : e["shape"]) {
      if (!d.is_number_unsigned()) return bad("shape " + e["shape"].dump() + " is not a list of sizes");
      t.shape.push_back(d.get<std::int64_t>());
    }
    const auto& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return bad("data_offsets " + off.dump() + " is not [begin, end]");
    const auto begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
    if (begin > end || end > data_size)
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "] fall outside the data section of " + std::to_string(data_size) + " bytes");
    t.begin = begin;
    t.bytes = end - begin;
    const auto want = static_cast<std::uint64_t>(t.numel()) * item_size(t.dtype);
    if (t.bytes != want)
      return bad(std::to_string(t.bytes) + " bytes for shape " + shape_string(t.shape) + " of " +
                 to_string(t.dtype) + " (needs " + std::to_string(want) + ")");
    ranges.emplace_back(begin, end);
    f->tensors_.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second && ranges[i].first != ranges[i].second)
      return file_error(path, "tensor data ranges overlap at offset " + std::to_string(ranges[i].first));
  return std::shared_ptr<const safetensors_file>(std::move(f));
}

const tensor_info* safetensors_file::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

expected<weight_set> weight_set::open_file(const std::string& path) {
  auto f = safetensors_file::open(path);
  if (!f) return f.err();
  weight_set w;
  w.files_.push_back(*f);
  for (const auto& [name, info] : (*f)->tensors()) w.where_[name] = 0;
  return w;
}

expected<weight_set> weight_set::open_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) return error{errc::not_found, dir + ": not a model folder"};
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      std::ifstream in(index);
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      return file_error(index.string(), std::string("not valid JSON: ") + e.what());
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      return file_error(index.string(), "no weight_map object");
    weight_set w;
    std::map<std::string, std::size_t> file_index;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) return file_error(index.string(), "weight_map entry '" + it.key() + "' is not a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos)
        return file_error(index.string(), "shard name '" + shard + "' leaves the folder");
      auto fi = file_index.find(shard);
      if (fi == file_index.end()) {
        auto f = safetensors_file::open((fs::path(dir) / shard).string());
        if (!f) return f.err();
        fi = file_index.emplace(shard, w.files_.size()).first;
        w.files_.push_back(*f);
      }
      if (w.files_[fi->second]->find(it.key()) == nullptr)
        return file_error((fs::path(dir) / shard).string(),
                          "tensor '" + it.key() + "' listed in the index is missing");
      w.where_[it.key()] = fi->second;
    }
    return w;
  }
  const fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::exists(single)) return open_file(single.string());
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") found.push_back(e.path().string());
  if (found.size() == 1) return open_file(found[0]);
  return error{errc::not_found, dir + ": no model.safetensors, model.safetensors.index.json or single *.safetensors file"};
}

weight_set::located weight_set::find(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return {};
  const auto* f = files_[it->second].get();
  return {f, f->find(name)};
}

std::vector<std::string> weight_set::names() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : where_) out.push_back(n);
  return out;
}

expected<std::vector<float>> weight_set::read_f32(const std::string& name,
                                                  const std::vector<std::int64_t>& shape) const {
  const auto loc = find(name);
  if (loc.info == nullptr) return error{errc::not_found, "tensor '" + name + "' is missing from the weights"};
  const auto& t = *loc.info;
  auto where = [&] { return loc.file->path() + ": tensor '" + name + "'"; };
  if (t.shape != shape)
    return error{errc::invalid_argument, where() + " has shape " + shape_string(t.shape) +
                                             ", the config needs " + shape_string(shape)};
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  const std::uint8_t* src = loc.file->data(t);
  switch (t.dtype) {
    case tensor_dtype::f32: std::memcpy(out.data(), src, t.bytes); break;
    case tensor_dtype::f16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      break;
    case tensor_dtype::bf16:
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = bf16_to_float(h);
      }
      break;
    default:
      return error{errc::invalid_argument, where() + " has dtype " + to_string(t.dtype) +
                                               "; F32, F16 or BF16 is needed"};
  }
  return out;
}

status write_safetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, std::pair<std::vector<std::int64_t>, const float*>>>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    std::uint64_t n = 1;
    for (auto d : t.first) n *= static_cast<std::uint64_t>(d);
    header[name] = {{"dtype", "F32"}, {"shape", t.first}, {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary);
  if (!out) return error{errc::io_error, path + ": cannot write"};
  std::uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : tensors) {
    std::uint64_t n = 1;
    for (auto d : t.first) n *= static_cast<std::uint64_t>(d);
    out.write(reinterpret_cast<const char*>(t.second), static_cast<std::streamsize>(4 * n));
  }
  if (!out) return error{errc::io_error, path + ": write failed"};
  return {};
}

}  // namespace vlcache
