#include "core/models/processor_config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace vlcache {

namespace {

/// A size entry: a number, {"shortest_edge": n} or {"height": h, "width": w}
/// (square only; the side is returned, 0 when absent).
expected<int> side_of(const nlohmann::json& j, const std::string& key, const std::string& origin) {
  if (!j.contains(key)) return 0;
  const auto& v = j.at(key);
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_object() && v.contains("shortest_edge")) return v.at("shortest_edge").get<int>();
  if (v.is_object() && v.contains("height") && v.contains("width")) {
    const int h = v.at("height").get<int>();
    const int w = v.at("width").get<int>();
    if (h != w)
      return error{errc::invalid_config, origin + ": " + key + " is " + std::to_string(h) + "x" +
                                             std::to_string(w) + "; vlcache encodes square inputs only"};
    return h;
  }
  return error{errc::invalid_config, origin + ": " + key + " is " + v.dump() +
                                         " (a number, {shortest_edge} or {height, width})"};
}

}  // namespace

expected<preprocess_config> parse_processor_config(const std::string& text, const std::string& origin,
                                                   int image_size) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return error{errc::invalid_config, origin + ": not JSON: " + e.what()};
  }
  if (!j.is_object()) return error{errc::invalid_config, origin + ": not a JSON object"};
  auto bad = [&](const std::string& what) { return error{errc::invalid_config, origin + ": " + what}; };
  try {
    preprocess_config c = preprocess_config::clip(image_size);
    auto size = side_of(j, "size", origin);
    if (!size) return size.err();
    auto crop = side_of(j, "crop_size", origin);
    if (!crop) return crop.err();
    const bool center_crop = j.value("do_center_crop", true);
    const int input = center_crop && *crop > 0 ? *crop : *size;
    if (input > 0 && input != image_size)
      return bad(std::string(center_crop ? "crop_size" : "size") + " is " + std::to_string(input) +
                 ", but the model's config.json has image_size " + std::to_string(image_size));
    if (*size > 0) c.shortest_edge = center_crop ? *size : image_size;
    if (j.value("do_resize", true) == false) return bad("do_resize is false; vlcache always resizes to the input");
    const int resample = j.value("resample", 3);
    if (resample != 3)
      return bad("resample is " + std::to_string(resample) + "; vlcache resizes bicubic (3) only");
    if (!j.value("do_rescale", true)) return bad("do_rescale is false; vlcache rescales pixels by 1/255");
    if (std::abs(j.value("rescale_factor", 1.0 / 255.0) - 1.0 / 255.0) > 1e-9)
      return bad("rescale_factor is " + std::to_string(j.value("rescale_factor", 0.0)) + "; vlcache rescales by 1/255");
    if (j.value("do_normalize", true)) {
      for (const auto* key : {"image_mean", "image_std"}) {
        if (!j.contains(key)) continue;
        const auto& a = j.at(key);
        if (!a.is_array() || a.size() != 3) return bad(std::string(key) + " is " + a.dump() + " (three numbers)");
        auto& dst = std::string(key) == "image_mean" ? c.mean : c.std;
        for (int k = 0; k < 3; ++k) dst[k] = a.at(k).get<float>();
      }
    } else {
      c.mean = {0.0f, 0.0f, 0.0f};
      c.std = {1.0f, 1.0f, 1.0f};
    }
    if (auto st = c.validate(); !st) return bad(st.err().message);
    return c;
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("a value of the wrong type: ") + e.what());
  }
}

}  // namespace vlcache
