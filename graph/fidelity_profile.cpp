#include "graph/fidelity_profile.hpp"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <toml++/toml.h>

#include "core/models/clip_config.hpp"
#include "graph/cache_spec.hpp"
#include "graph/table_reader.hpp"

namespace vlcache::graph {

std::string model_shape::describe() const {
  return std::to_string(image_size) + "/" + std::to_string(patch_size) + ", width " + std::to_string(hidden_size) +
         ", " + std::to_string(layers) + " layers";
}

expected<model_shape> shape_of_model(const std::string& model) {
  expected<clip_vision_config> cfg = error{errc::not_found, ""};
  if (is_preset_name(model)) {
    cfg = preset_config(model);
  } else {
    const auto path = std::filesystem::absolute(std::filesystem::path(model) / "config.json");
    std::vector<std::string> errors;
    auto text = read_text_file(path.string(), errors);
    if (!text) return error{errc::not_found, "model '" + model + "': cannot read " + path.string()};
    cfg = parse_clip_config(*text, path.string());
  }
  if (!cfg) return cfg.err();
  return model_shape{cfg->image_size, cfg->patch_size, cfg->hidden_size, cfg->layers_used()};
}

namespace {

/// An array of numbers under `key` of table `t` (absent: empty).
std::vector<double> numbers(const toml::table* t, const std::string& table, const std::string& key,
                            std::vector<std::string>& errors) {
  std::vector<double> out;
  if (t == nullptr) return out;
  const toml::node* n = t->get(key);
  if (n == nullptr) return out;
  const toml::array* a = n->as_array();
  if (a == nullptr) {
    errors.push_back("[" + table + "]." + key + ": expected an array of numbers");
    return out;
  }
  for (const auto& v : *a) {
    if (auto d = v.value<double>()) out.push_back(*d);
    else errors.push_back("[" + table + "]." + key + ": expected numbers only");
  }
  return out;
}

/// A TOML basic string.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // no control characters in a path or name
    out += c;
  }
  return out + "\"";
}

}  // namespace

expected<fidelity_profile> load_fidelity_profile(const std::string& path) {
  const std::string where = std::filesystem::absolute(path).string();
  std::vector<std::string> errors;
  auto text = read_text_file(where, errors);
  if (!text) return error{errc::not_found, "fidelity profile " + where + ": cannot open it"};
  auto root = parse_toml(*text, where, errors);
  if (!root) return error{errc::invalid_config, errors.front()};
  fidelity_profile p;
  table_reader top(&*root, "", errors);
  table_reader pr(top.table("profile"), "profile", errors);
  p.model = pr.string("model").value_or("");
  p.made_from = pr.string("made_from").value_or("");
  p.answers = pr.string("answers").value_or("");
  auto need = [&](const char* key) {
    auto v = pr.integer(key, 1, 1 << 20);
    if (!v) pr.fail(key, "missing: the model shape the profile was measured on");
    return static_cast<int>(v.value_or(0));
  };
  p.shape = {need("image_size"), need("patch_size"), need("hidden_size"), need("layers")};
  p.target.cosine = pr.number("target", 1e-6, 1.0).value_or(p.target.cosine);
  p.target.percentile = pr.number("percentile", 0.0, 50.0).value_or(p.target.percentile);
  p.target.max_err_over_naive = pr.number("max_err_over_naive", 0.0, 100.0).value_or(0.0);
  pr.reject_unknown_keys();
  table_reader g(top.table("gate"), "gate", errors);
  p.gate = gate_thresholds{};
  if (auto v = g.number("mad", 0.0, 255.0)) p.gate.mad = static_cast<float>(*v);
  p.gate.mad_cell = static_cast<int>(g.integer("mad_cell", 1, 64).value_or(1));
  if (auto v = g.number("noise_factor", 0.01, 100.0)) p.gate.noise_factor = static_cast<float>(*v);
  if (!p.gate.mad) g.fail("mad", "missing: the gate the profile was measured with");
  g.reject_unknown_keys();
  table_reader e(top.table("encoder"), "encoder", errors);
  p.attention_test = e.boolean("attention_test").value_or(true);
  p.weight_dtype = e.string("weight_dtype").value_or("f32");
  p.store_dtype = e.string("store_dtype").value_or("f32");
  e.reject_unknown_keys();
  const toml::table* lt = top.table("ladder");
  table_reader l(lt, "ladder", errors);
  p.ladder = numbers(lt, "ladder", "tolerances", errors);
  l.mark_known("tolerances");
  p.start = static_cast<int>(l.integer("start", 0, 1 << 10).value_or(0));
  const auto share = numbers(lt, "ladder", "layer_share", errors);
  const auto cosine = numbers(lt, "ladder", "cosine", errors);
  const auto speedup = numbers(lt, "ladder", "speedup", errors);
  auto en = numbers(lt, "ladder", "err_over_naive", errors);
  for (const char* k : {"layer_share", "cosine", "speedup", "err_over_naive"}) l.mark_known(k);
  if (en.size() != p.ladder.size()) en.assign(p.ladder.size(), -1);
  l.reject_unknown_keys();
  top.reject_unknown_keys();
  if (share.size() == p.ladder.size() && cosine.size() == p.ladder.size() && speedup.size() == p.ladder.size())
    for (std::size_t i = 0; i < p.ladder.size(); ++i) p.measured.push_back({share[i], cosine[i], speedup[i], en[i]});
  controller_config c;
  c.target = p.target;
  c.ladder = p.ladder;
  c.start = p.start;
  if (errors.empty())
    if (auto st = c.validate(); !st) errors.push_back("[ladder]: " + st.err().message);
  if (!errors.empty()) {
    std::string all = "fidelity profile " + where + ":";
    for (const auto& m : errors) all += "\n  " + m;
    return error{errc::invalid_config, all};
  }
  return p;
}

std::string profile_toml(const fidelity_profile& p) {
  std::ostringstream os;
  os << std::setprecision(6);
  auto list = [&](const char* key, auto field) {
    os << key << " = [";
    for (std::size_t i = 0; i < p.ladder.size(); ++i) os << (i ? ", " : "") << field(i);
    os << "]\n";
  };
  os << "# A fidelity profile written by `vlcache tune` (docs/fidelity.md). A pipeline\n"
        "# takes its gate, encoder mode and ladder unless set by hand; its cameras\n"
        "# start on `start` and move along the ladder to hold the target.\n"
     << "[profile]\n"
     << "model = " << quoted(p.model) << "\n"
     << "made_from = " << quoted(p.made_from) << "\n"
     << (p.answers.empty() ? "" : "answers = " + quoted(p.answers) + "\n")
     << "image_size = " << p.shape.image_size << "\npatch_size = " << p.shape.patch_size
     << "\nhidden_size = " << p.shape.hidden_size << "\nlayers = " << p.shape.layers << "\n"
     << "target = " << p.target.cosine << "\npercentile = " << p.target.percentile << "\n"
     << "max_err_over_naive = " << p.target.max_err_over_naive << "\n\n[gate]\n";
  if (p.gate.mad) os << "mad = " << *p.gate.mad << "\n";
  os << "mad_cell = " << p.gate.mad_cell << "\n";
  if (p.gate.noise_factor) os << "noise_factor = " << *p.gate.noise_factor << "\n";
  os << "\n[encoder]\nattention_test = " << (p.attention_test ? "true" : "false") << "\nweight_dtype = \""
     << p.weight_dtype << "\"\nstore_dtype = \"" << p.store_dtype << "\"\n\n[ladder]\n";
  list("tolerances", [&](std::size_t i) { return p.ladder[i]; });
  os << "start = " << p.start << "\n";
  if (p.measured.size() == p.ladder.size()) {
    os << "# measured on the footage, per rung\n";
    list("layer_share", [&](std::size_t i) { return p.measured[i].layer_share; });
    list("cosine", [&](std::size_t i) { return p.measured[i].cosine; });
    list("err_over_naive", [&](std::size_t i) { return p.measured[i].err_over_naive; });
    list("speedup", [&](std::size_t i) { return p.measured[i].speedup; });
  }
  return os.str();
}

status check_profile_shape(const fidelity_profile& p, const std::string& path, const model_shape& model,
                           const std::string& model_name) {
  if (p.shape == model) return {};
  return error{errc::invalid_config, "fidelity profile " + std::filesystem::absolute(path).string() +
                                         " was measured on a model of " + p.shape.describe() + ", but '" +
                                         model_name + "' is " + model.describe() +
                                         ": run `vlcache tune` for this model"};
}

}  // namespace vlcache::graph
