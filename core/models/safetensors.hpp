#pragma once
/// \file
/// Memory-mapped safetensors files and Hugging Face snapshot folders
/// (model.safetensors, or shards listed in model.safetensors.index.json).
///
/// Headers are validated strictly on open (length, JSON, dtypes, shapes,
/// offsets inside the data and not overlapping); every error names the file
/// and, where there is one, the tensor. Tensors are read only when asked
/// for, so a language model's weights beside a vision tower are never paged in.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache {

enum class tensor_dtype { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean, f8_e4m3, f8_e5m2 };

[[nodiscard]] const char* to_string(tensor_dtype t) noexcept;
[[nodiscard]] std::size_t item_size(tensor_dtype t) noexcept;

struct tensor_info {
  std::string name;
  tensor_dtype dtype = tensor_dtype::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< offset in the data section
  std::uint64_t bytes = 0;

  [[nodiscard]] std::int64_t numel() const noexcept;
};

class safetensors_file {
 public:
  [[nodiscard]] static expected<std::shared_ptr<const safetensors_file>> open(const std::string& path);
  ~safetensors_file();
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;

  [[nodiscard]] const tensor_info* find(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, tensor_info>& tensors() const noexcept { return tensors_; }
  [[nodiscard]] const std::uint8_t* data(const tensor_info& t) const noexcept {
    return data_ + t.begin;
  }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  safetensors_file() = default;
  std::string path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  const std::uint8_t* data_ = nullptr;
  std::map<std::string, tensor_info> tensors_;
};

/// The weights of one snapshot folder, across its shards.
class weight_set {
 public:
  /// `dir` holds model.safetensors, or model.safetensors.index.json and the
  /// shards it names, or a single *.safetensors file.
  [[nodiscard]] static expected<weight_set> open_folder(const std::string& dir);
  [[nodiscard]] static expected<weight_set> open_file(const std::string& path);

  struct located {
    const safetensors_file* file = nullptr;
    const tensor_info* info = nullptr;
  };
  [[nodiscard]] located find(const std::string& name) const;
  [[nodiscard]] bool contains(const std::string& name) const { return find(name).info != nullptr; }
  [[nodiscard]] std::vector<std::string> names() const;

  /// The tensor as f32 (f32, f16 and bf16 storage), checked against
  /// `expected_shape`; errors name the tensor, its file, and the mismatch.
  [[nodiscard]] expected<std::vector<float>> read_f32(const std::string& name,
                                                      const std::vector<std::int64_t>& expected_shape) const;

 private:
  std::vector<std::shared_ptr<const safetensors_file>> files_;
  std::map<std::string, std::size_t> where_;  // tensor name -> index in files_
};

/// Writes f32 tensors as a safetensors file (used by `vlcache encode`).
[[nodiscard]] status write_safetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, std::pair<std::vector<std::int64_t>, const float*>>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

[[nodiscard]] std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace vlcache
