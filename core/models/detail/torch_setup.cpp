#include "core/models/detail/torch_setup.hpp"

#include "core/base/device_names.hpp"

namespace vlcache::detail {

std::uint64_t preset_seed(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the name: fixed per preset
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

expected<at::Device> parse_device(const std::string& s) {
  auto d = parse_device_name(s);
  if (!d) return error{d.err().code, "device " + d.err().message};
  if (!d->cuda) return at::Device(at::kCPU);
  if (!at::hasCUDA()) return error{errc::invalid_config, "device '" + s + "' requested, but this LibTorch has no CUDA"};
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d->index));
}

expected<at::ScalarType> parse_dtype(const std::string& s, const at::Device& device, bool bf16_on_cpu) {
  auto t = parse_dtype_name(s, device_name{device.is_cuda(), 0}, bf16_on_cpu);
  if (!t) return error{t.err().code, "dtype " + t.err().message};
  switch (*t) {
    case dtype_name::f16: return at::kHalf;
    case dtype_name::bf16: return at::kBFloat16;
    case dtype_name::f32: break;
  }
  return at::kFloat;
}

}  // namespace vlcache::detail
