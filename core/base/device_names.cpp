#include "core/base/device_names.hpp"

namespace vlcache {

expected<device_name> parse_device_name(const std::string& s) {
  if (s == "cpu") return device_name{};
  if (s == "cuda") return device_name{true, 0};
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 7 &&
      s.find_first_not_of("0123456789", 5) == std::string::npos)
    return device_name{true, std::stoi(s.substr(5))};
  return error{errc::invalid_config, "'" + s + "' (cpu, cuda or cuda:N)"};
}

expected<dtype_name> parse_dtype_name(const std::string& s, const device_name& device, bool bf16_on_cpu) {
  dtype_name t;
  if (s == "f32") t = dtype_name::f32;
  else if (s == "f16") t = dtype_name::f16;
  else if (s == "bf16") t = dtype_name::bf16;
  else return error{errc::invalid_config, "'" + s + "' (f32, f16 or bf16)"};
  if (!device.cuda && t != dtype_name::f32 && !(bf16_on_cpu && t == dtype_name::bf16))
    return error{errc::invalid_config, "'" + s + "' is not supported on cpu (use f32" +
                                           std::string(bf16_on_cpu ? " or bf16)" : ")")};
  return t;
}

expected<bool> parse_half_name(const std::string& s) {
  if (s == "f32" || s == "f16") return s == "f16";
  return error{errc::invalid_config, "'" + s + "' (f32 or f16)"};
}

expected<store_precision> parse_store_precision(const std::string& s) {
  if (s == "f32") return store_precision::f32;
  if (s == "f16") return store_precision::f16;
  if (s == "i8") return store_precision::i8;
  return error{errc::invalid_config, "'" + s + "' (f32, f16 or i8)"};
}

const char* to_string(store_precision p) noexcept {
  switch (p) {
    case store_precision::f16: return "f16";
    case store_precision::i8: return "i8";
    case store_precision::f32: break;
  }
  return "f32";
}

}  // namespace vlcache
