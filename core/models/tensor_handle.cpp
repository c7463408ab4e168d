#include "core/models/tensor_handle.hpp"

#include <ATen/ATen.h>

#include <cstring>

namespace vlcache {

tensor_handle::tensor_handle(const at::Tensor& t) : t_(std::make_shared<const at::Tensor>(t)) {}

tensor_handle tensor_handle::from_floats(const float* data, const std::vector<std::int64_t>& shape) {
  auto t = at::empty(shape, at::kFloat);
  std::memcpy(t.data_ptr<float>(), data, sizeof(float) * static_cast<std::size_t>(t.numel()));
  return tensor_handle(t);
}

std::vector<std::int64_t> tensor_handle::shape() const {
  if (!t_) return {};
  return t_->sizes().vec();
}

std::int64_t tensor_handle::numel() const { return t_ ? t_->numel() : 0; }

const float* tensor_handle::data() const {
  if (!t_) return nullptr;
  if (!cpu_f32_) cpu_f32_ = std::make_shared<const at::Tensor>(t_->to(at::kCPU, at::kFloat).contiguous());
  return cpu_f32_->data_ptr<float>();
}

std::vector<float> tensor_handle::to_vector() const {
  const float* p = data();
  return p ? std::vector<float>(p, p + numel()) : std::vector<float>{};
}

}  // namespace vlcache
