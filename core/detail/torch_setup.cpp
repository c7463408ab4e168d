#include "core/detail/torch_setup.hpp"

namespace vlcache::detail {

std::uint64_t preset_seed(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the name: fixed per preset
  for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

expected<at::Device> parse_device(const std::string& s) {
  if (s == "cpu") return at::Device(at::kCPU);
  if (s.rfind("cuda", 0) == 0) {
    int index = 0;
    if (s.size() > 4) {
      if (s[4] != ':' || s.size() == 5 || s.find_first_not_of("0123456789", 5) != std::string::npos)
        return error{errc::invalid_config, "device '" + s + "' (cpu, cuda or cuda:N)"};
      index = std::stoi(s.substr(5));
    }
    if (!at::hasCUDA())
      return error{errc::invalid_config, "device '" + s + "' requested, but this LibTorch has no CUDA"};
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return error{errc::invalid_config, "device '" + s + "' (cpu, cuda or cuda:N)"};
}

expected<at::ScalarType> parse_dtype(const std::string& s, const at::Device& device, bool bf16_on_cpu) {
  at::ScalarType t;
  if (s == "f32") t = at::kFloat;
  else if (s == "f16") t = at::kHalf;
  else if (s == "bf16") t = at::kBFloat16;
  else return error{errc::invalid_config, "dtype '" + s + "' (f32, f16 or bf16)"};
  if (device.is_cpu() && t != at::kFloat && !(bf16_on_cpu && t == at::kBFloat16))
    return error{errc::invalid_config, "dtype '" + s + "' is not supported on cpu (use f32" +
                                           std::string(bf16_on_cpu ? " or bf16)" : ")")};
  return t;
}

}  // namespace vlcache::detail
