#pragma once
/// \file
/// A shared, immutable tensor that keeps LibTorch out of the headers: the
/// pipeline passes these between stages without copying the data.

#include <cstdint>
#include <memory>
#include <vector>

namespace at { class Tensor; }

namespace vlcache {

class tensor_handle {
 public:
  tensor_handle() = default;
  explicit tensor_handle(const at::Tensor& t);
  /// A CPU f32 tensor holding a copy of `data` (e.g. tokens that came over the network).
  [[nodiscard]] static tensor_handle from_floats(const float* data, const std::vector<std::int64_t>& shape);

  [[nodiscard]] bool empty() const noexcept { return t_ == nullptr; }
  [[nodiscard]] std::vector<std::int64_t> shape() const;
  [[nodiscard]] std::int64_t numel() const;
  /// The values as f32 on the CPU, contiguous; converted once and cached.
  [[nodiscard]] const float* data() const;
  [[nodiscard]] std::vector<float> to_vector() const;
  /// For code that works in LibTorch.
  [[nodiscard]] const at::Tensor& tensor() const { return *t_; }

 private:
  std::shared_ptr<const at::Tensor> t_;
  mutable std::shared_ptr<const at::Tensor> cpu_f32_;
};

}  // namespace vlcache
