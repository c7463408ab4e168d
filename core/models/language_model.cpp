#include "core/models/language_model.hpp"
#include "core/models/clip_config.hpp"
#include "core/base/elapsed.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "core/models/detail/dense_layer.hpp"
#include "core/models/detail/torch_setup.hpp"
#include "core/models/safetensors.hpp"

namespace vlcache {
namespace {

using detail::dense;

struct decoder_layer {
  at::Tensor in_norm, post_norm;  // [hidden]
  dense qkv;                      // q, k, v fused: [(heads + 2 kv_heads) * head_dim, hidden]
  dense o, gate_up, down;         // gate and up fused: [2 * intermediate, hidden]
};

struct llama_weights {
  at::Tensor embed;  // [vocab, hidden]
  std::vector<decoder_layer> layers;
  at::Tensor norm;
  dense lm_head;
};

/// Raw per-projection tensors, as stored in a checkpoint.
struct raw_layer {
  at::Tensor in_norm, post_norm, q, k, v, o, gate, up, down;
};

/// Where the decoder's tensors live: model.* (LlamaForCausalLM),
/// language_model.model.* (old llava-hf), model.language_model.* (new llava-hf).
struct layout {
  std::string body, head;
};
const layout layouts[] = {{"model.", "lm_head.weight"},
                          {"language_model.model.", "language_model.lm_head.weight"},
                          {"model.language_model.", "lm_head.weight"}};

}  // namespace

struct kv_sequence::state {
  std::vector<at::Tensor> k, v;  // per layer [kv_heads, capacity, head_dim]
  int length = 0;
};

kv_sequence::kv_sequence() : s_(std::make_unique<state>()) {}
kv_sequence::~kv_sequence() = default;
kv_sequence::kv_sequence(kv_sequence&&) noexcept = default;
kv_sequence& kv_sequence::operator=(kv_sequence&&) noexcept = default;
int kv_sequence::length() const noexcept { return s_->length; }
void kv_sequence::truncate(int length) noexcept { s_->length = std::max(0, std::min(length, s_->length)); }
std::uint64_t kv_sequence::bytes() const {
  std::uint64_t b = 0;
  for (const auto& t : s_->k) b += static_cast<std::uint64_t>(t.numel()) * t.element_size();
  for (const auto& t : s_->v) b += static_cast<std::uint64_t>(t.numel()) * t.element_size();
  return b;
}

struct language_model::impl {
  llama_config cfg;
  llama_weights w;
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  at::Tensor inv_freq;  // [head_dim / 2] f32, on the device
  bool random = false;
  std::string source;

  at::TensorOptions opts() const { return at::TensorOptions().device(device).dtype(dtype); }

  /// LlamaRMSNorm: normalise in f32, scale in the model's dtype.
  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) const {
    auto xf = x.to(at::kFloat);
    auto var = xf.pow(2).mean(-1, true);
    return weight * (xf * at::rsqrt(var + cfg.rms_norm_eps)).to(x.scalar_type());
  }

  /// Rotary embedding in the half-split convention (rotate_half), x [n, heads, head_dim].
  static at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const auto half = x.size(-1) / 2;
    auto rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
  }

  void reserve(kv_sequence::state& s, int needed) const {
    const std::int64_t kvh = cfg.num_kv_heads, dh = cfg.head_dim();
    const std::int64_t capacity = s.k.empty() ? 0 : s.k[0].size(1);
    if (needed <= capacity) return;
    const std::int64_t grown = std::max<std::int64_t>({needed, 2 * capacity, 64});
    for (int l = 0; l < cfg.num_layers; ++l) {
      auto k = at::empty({kvh, grown, dh}, opts());
      auto v = at::empty({kvh, grown, dh}, opts());
      if (capacity > 0 && s.length > 0) {
        k.narrow(1, 0, s.length).copy_(s.k[l].narrow(1, 0, s.length));
        v.narrow(1, 0, s.length).copy_(s.v[l].narrow(1, 0, s.length));
      }
      if (s.k.size() <= static_cast<std::size_t>(l)) {
        s.k.push_back(k);
        s.v.push_back(v);
      } else {
        s.k[l] = k;
        s.v[l] = v;
      }
    }
  }

  /// One sequence's part of a batched forward.
  struct segment {
    kv_sequence::state* s;
    std::int64_t offset, n;  // its rows in the batch
    int keys;                // positions it attends to: 0..keys-1
    at::Tensor pos, cos, sin, bias;
  };

  /// Rows of several sequences in one pass: the token-wise work (norms,
  /// projections, MLP) runs on all rows together, so each weight is read
  /// once for the batch; rotary, the cache writes and attention stay per
  /// sequence. Returns, per sequence, the logits of its last row (or all).
  std::vector<at::Tensor> forward(const std::vector<kv_sequence::state*>& seqs, const std::vector<at::Tensor>& rows,
                                  const std::vector<const std::vector<int>*>& positions, bool all_logits) const {
    const std::int64_t h = cfg.num_heads, kvh = cfg.num_kv_heads, dh = cfg.head_dim();
    const std::int64_t rep = h / kvh;
    std::vector<segment> segs;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      segment g{seqs[i], offset, rows[i].size(0), positions[i]->back() + 1, {}, {}, {}, {}};
      reserve(*g.s, g.keys);
      g.pos = at::tensor(std::vector<std::int64_t>(positions[i]->begin(), positions[i]->end()), at::kLong).to(device);
      // cos/sin in f32 as LlamaRotaryEmbedding computes them, then the model's dtype.
      auto freqs = g.pos.to(at::kFloat).unsqueeze(1) * inv_freq.unsqueeze(0);
      auto emb = at::cat({freqs, freqs}, -1);
      g.cos = emb.cos().to(dtype).unsqueeze(1);  // [n, 1, dh]
      g.sin = emb.sin().to(dtype).unsqueeze(1);
      // Causal mask over the keys the rows can see: key j is hidden from the row at p when j > p.
      auto mask = at::arange(g.keys, g.pos.options()).unsqueeze(0).gt(g.pos.unsqueeze(1));  // [n, keys]
      g.bias = at::zeros({g.n, g.keys}, at::TensorOptions().device(device).dtype(at::kFloat))
                   .masked_fill_(mask, -std::numeric_limits<float>::infinity());
      offset += g.n;
      segs.push_back(std::move(g));
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    auto x = (rows.size() == 1 ? rows[0] : at::cat(rows, 0)).to(device, dtype);
    for (int l = 0; l < cfg.num_layers; ++l) {
      const auto& L = w.layers[static_cast<std::size_t>(l)];
      auto qkv = L.qkv(rms_norm(x, L.in_norm));
      std::vector<at::Tensor> outs;
      for (auto& g : segs) {
        auto part = qkv.narrow(0, g.offset, g.n);
        auto q = rope(part.narrow(1, 0, h * dh).view({g.n, h, dh}), g.cos, g.sin);
        auto k = rope(part.narrow(1, h * dh, kvh * dh).view({g.n, kvh, dh}), g.cos, g.sin);
        auto v = part.narrow(1, (h + kvh) * dh, kvh * dh).view({g.n, kvh, dh});
        g.s->k[l].index_copy_(1, g.pos, k.transpose(0, 1));
        g.s->v[l].index_copy_(1, g.pos, v.transpose(0, 1));
        auto K = g.s->k[l].narrow(1, 0, g.keys), V = g.s->v[l].narrow(1, 0, g.keys);  // [kvh, keys, dh]
        // Query head g*rep + r reads kv head g (repeat_kv): group the queries per kv head.
        auto qg = q.transpose(0, 1).reshape({kvh, rep * g.n, dh});
        auto scores = at::bmm(qg, K.transpose(1, 2)).mul_(scale).to(at::kFloat).view({kvh, rep, g.n, g.keys});
        scores.add_(g.bias);
        auto p = at::softmax(scores, -1).to(dtype).view({kvh, rep * g.n, g.keys});
        outs.push_back(at::bmm(p, V).view({h, g.n, dh}).transpose(0, 1).reshape({g.n, h * dh}));
      }
      x = x + L.o(outs.size() == 1 ? outs[0] : at::cat(outs, 0));
      auto gu = L.gate_up(rms_norm(x, L.post_norm));
      const std::int64_t i = cfg.intermediate_size;
      x = x + L.down(at::silu(gu.narrow(1, 0, i)) * gu.narrow(1, i, i));
    }
    std::vector<at::Tensor> last;
    for (auto& g : segs) {
      g.s->length = std::max(g.s->length, g.keys);
      last.push_back(all_logits ? x.narrow(0, g.offset, g.n) : x.narrow(0, g.offset + g.n - 1, 1));
    }
    auto logits = w.lm_head(rms_norm(last.size() == 1 ? last[0] : at::cat(last, 0), w.norm).contiguous()).to(at::kFloat);
    std::vector<at::Tensor> out;
    for (std::int64_t i = 0, at_row = 0; i < static_cast<std::int64_t>(last.size()); ++i) {
      out.push_back(logits.narrow(0, at_row, last[static_cast<std::size_t>(i)].size(0)));
      at_row += last[static_cast<std::size_t>(i)].size(0);
    }
    return out;
  }
};

namespace {

std::optional<std::size_t> find_layout(const weight_set& ws) {
  for (std::size_t i = 0; i < std::size(layouts); ++i)
    if (ws.contains(layouts[i].body + "embed_tokens.weight")) return i;
  return std::nullopt;
}

/// Reads every decoder tensor with its shape checked; errors name the tensor and file.
expected<std::pair<at::Tensor, std::vector<raw_layer>>> read_raw(const weight_set& ws, const llama_config& c,
                                                                 const layout& lay, at::ScalarType dtype,
                                                                 at::Tensor& norm, at::Tensor& head) {
  const std::int64_t d = c.hidden_size, i = c.intermediate_size, v = c.vocab_size;
  const std::int64_t q = static_cast<std::int64_t>(c.num_heads) * c.head_dim(),
                     kv = static_cast<std::int64_t>(c.num_kv_heads) * c.head_dim();
  std::optional<error> failed;
  auto get = [&](const std::string& name, std::vector<std::int64_t> shape) -> at::Tensor {
    if (failed) return {};
    auto data = ws.read_f32(name, shape);
    if (!data) {
      failed = data.err();
      return {};
    }
    return at::from_blob(data->data(), shape, at::kFloat).to(dtype, /*non_blocking=*/false, /*copy=*/true);
  };
  auto embed = get(lay.body + "embed_tokens.weight", {v, d});
  std::vector<raw_layer> layers;
  for (int l = 0; l < c.num_layers && !failed; ++l) {
    const std::string pre = lay.body + "layers." + std::to_string(l) + ".";
    raw_layer r;
    r.in_norm = get(pre + "input_layernorm.weight", {d});
    r.post_norm = get(pre + "post_attention_layernorm.weight", {d});
    r.q = get(pre + "self_attn.q_proj.weight", {q, d});
    r.k = get(pre + "self_attn.k_proj.weight", {kv, d});
    r.v = get(pre + "self_attn.v_proj.weight", {kv, d});
    r.o = get(pre + "self_attn.o_proj.weight", {d, q});
    r.gate = get(pre + "mlp.gate_proj.weight", {i, d});
    r.up = get(pre + "mlp.up_proj.weight", {i, d});
    r.down = get(pre + "mlp.down_proj.weight", {d, i});
    layers.push_back(std::move(r));
  }
  norm = get(lay.body + "norm.weight", {d});
  if (!c.tie_word_embeddings) {
    if (!failed && !ws.contains(lay.head))
      return error{errc::not_found, "tensor '" + lay.head + "' is missing and tie_word_embeddings is false"};
    head = get(lay.head, {v, d});
  }
  if (failed) return *failed;
  return std::make_pair(embed, std::move(layers));
}

/// Random weights initialised as LlamaPreTrainedModel._init_weights does
/// (normal, std = initializer_range 0.02; norms at one).
/// Each tensor is drawn in f32 and stored in `dtype` at once, so a large
/// preset never holds all of its weights in f32.
std::pair<at::Tensor, std::vector<raw_layer>> random_raw(const llama_config& c, std::uint64_t seed, at::ScalarType dtype,
                                                         at::Tensor& norm, at::Tensor& head) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto normal = [&](std::vector<std::int64_t> shape) {
    return at::normal(0.0, 0.02, shape, gen, at::TensorOptions().dtype(at::kFloat)).to(dtype);
  };
  const std::int64_t d = c.hidden_size, i = c.intermediate_size, v = c.vocab_size;
  const std::int64_t q = static_cast<std::int64_t>(c.num_heads) * c.head_dim(),
                     kv = static_cast<std::int64_t>(c.num_kv_heads) * c.head_dim();
  auto embed = normal({v, d});
  std::vector<raw_layer> layers;
  for (int l = 0; l < c.num_layers; ++l) {
    raw_layer r{at::ones({d}), at::ones({d}), normal({q, d}), normal({kv, d}), normal({kv, d}),
                normal({d, q}), normal({i, d}), normal({i, d}), normal({d, i})};
    layers.push_back(std::move(r));
  }
  norm = at::ones({d});
  if (!c.tie_word_embeddings) head = normal({v, d});
  return {embed, std::move(layers)};
}

std::uint64_t parameter_bytes(const llama_config& c, std::uint64_t element_bytes) {
  const std::uint64_t d = c.hidden_size, i = c.intermediate_size, v = c.vocab_size;
  const std::uint64_t q = static_cast<std::uint64_t>(c.num_heads) * c.head_dim(),
                      kv = static_cast<std::uint64_t>(c.num_kv_heads) * c.head_dim();
  const std::uint64_t per_layer = 2 * d + (q + 2 * kv) * d + d * q + 3 * i * d;
  return element_bytes * (v * d * (c.tie_word_embeddings ? 1 : 2) + c.num_layers * per_layer + d);
}

expected<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{errc::not_found, path + ": missing (a Hugging Face snapshot has one)"};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

language_model::language_model(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
language_model::~language_model() = default;

expected<std::unique_ptr<language_model>> language_model::load(const std::string& model, const llm_options& options) {
  auto device = detail::parse_device(options.device);
  if (!device) return device.err();
  auto dtype = detail::parse_dtype(options.dtype, *device, /*bf16_on_cpu=*/true);
  if (!dtype) return dtype.err();
  auto p = std::make_unique<impl>();
  p->device = *device;
  p->dtype = *dtype;
  p->source = model;
  at::Tensor embed, norm, head;
  std::vector<raw_layer> raw;
  try {
    namespace fs = std::filesystem;
    if (!fs::is_directory(model)) {
      auto cfg = llama_preset_config(model, options.vocab_size);
      if (!cfg) {
        if (cfg.err().code == errc::not_found)
          return error{errc::not_found, "model '" + model +
                                            "' is neither a preset (" + std::string(preset_names) + ") nor a folder"};
        return cfg.err();
      }
      p->cfg = *cfg;
      // A random preset that cannot fit is refused before allocating it.
      const std::uint64_t need = parameter_bytes(p->cfg, p->dtype == at::kFloat ? 4 : 2);
      const auto pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      const std::uint64_t have = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * page : 0;
      if (have > 0 && need > have * 3 / 4)
        return error{errc::capacity, "preset '" + model + "' needs " + std::to_string(need >> 30) + " GiB of " +
                                         options.dtype + " weights; this machine has " + std::to_string(have >> 30) +
                                         " GiB" + (p->dtype == at::kFloat ? " (dtype bf16 halves it)" : "")};
      auto r = random_raw(p->cfg, options.seed != 0 ? options.seed : detail::preset_seed("llm:" + model), p->dtype,
                          norm, head);
      embed = r.first;
      raw = std::move(r.second);
      p->random = true;
    } else {
      const std::string config_path = (fs::path(model) / "config.json").string();
      auto text = read_text(config_path);
      if (!text) return text.err();
      auto cfg = parse_llama_config(*text, config_path);
      if (!cfg) return cfg.err();
      p->cfg = *cfg;
      auto ws = weight_set::open_folder(model);
      if (!ws) return ws.err();
      auto which = find_layout(*ws);
      if (!which)
        return error{errc::not_found, model + ": no LLaMA decoder among the weights (looked for model.embed_tokens, "
                                              "language_model.model.embed_tokens, model.language_model.embed_tokens)"};
      auto r = read_raw(*ws, p->cfg, layouts[*which], p->dtype, norm, head);
      if (!r) return r.err();
      embed = r->first;
      raw = std::move(r->second);
    }
    auto to_dev = [&](const at::Tensor& t) { return t.to(p->device, p->dtype).contiguous(); };
    p->w.embed = to_dev(embed);
    p->w.norm = to_dev(norm);
    p->w.lm_head = {p->cfg.tie_word_embeddings ? p->w.embed : to_dev(head), {}, {}};
    p->w.lm_head.prepare(false);
    for (auto& r : raw) {
      decoder_layer L;
      L.in_norm = to_dev(r.in_norm);
      L.post_norm = to_dev(r.post_norm);
      L.qkv = {to_dev(at::cat({r.q, r.k, r.v}, 0)), {}, {}};
      L.o = {to_dev(r.o), {}, {}};
      L.gate_up = {to_dev(at::cat({r.gate, r.up}, 0)), {}, {}};
      L.down = {to_dev(r.down), {}, {}};
      for (auto* d : {&L.qkv, &L.o, &L.gate_up, &L.down}) d->prepare(false);
      r = raw_layer{};  // each weight is held once
      p->w.layers.push_back(std::move(L));
    }
    const std::int64_t dh = p->cfg.head_dim();
    p->inv_freq = (1.0 / at::pow(p->cfg.rope_theta, at::arange(0, dh, 2, at::kLong).to(at::kFloat) / dh))
                      .to(at::kFloat)
                      .to(p->device);
  } catch (const c10::Error& e) {
    return error{errc::io_error, "loading '" + model + "' failed in LibTorch: " + e.what_without_backtrace()};
  }
  if (options.threads > 0) at::set_num_threads(options.threads);
  return std::unique_ptr<language_model>(new language_model(std::move(p)));
}

const llama_config& language_model::config() const noexcept { return impl_->cfg; }
bool language_model::random_weights() const noexcept { return impl_->random; }

std::string language_model::description() const {
  const auto& c = impl_->cfg;
  std::ostringstream os;
  os << (impl_->random ? "RANDOM-WEIGHT preset '" : "weights from '") << impl_->source << "': LLaMA "
     << c.num_layers << " layers, width " << c.hidden_size << ", " << c.num_heads << " heads / " << c.num_kv_heads
     << " kv heads, vocabulary " << c.vocab_size;
  return os.str();
}

expected<tensor_handle> language_model::embed(const std::vector<int>& ids, const tensor_handle* image_features) const {
  const auto& c = impl_->cfg;
  std::vector<std::int64_t> idx(ids.size());
  std::vector<std::int64_t> image_rows;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      return error{errc::invalid_argument, "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                               " is outside the vocabulary of " + std::to_string(c.vocab_size)};
    idx[i] = ids[i];
    if (ids[i] == c.image_token_index) image_rows.push_back(static_cast<std::int64_t>(i));
  }
  try {
    auto e = impl_->w.embed.index_select(0, at::tensor(idx, at::kLong).to(impl_->device));
    if (image_features != nullptr && !image_features->empty()) {
      const auto shape = image_features->shape();
      if (shape.size() != 2 || shape[1] != c.hidden_size)
        return error{errc::invalid_argument, "image features have shape " + shape_string(shape) +
                                                 ", the language model needs [N, " + std::to_string(c.hidden_size) + "]"};
      if (shape[0] != static_cast<std::int64_t>(image_rows.size()))
        return error{errc::invalid_argument, "the prompt has " + std::to_string(image_rows.size()) +
                                                 " image tokens but the image has " + std::to_string(shape[0]) +
                                                 " feature rows"};
      auto rows = at::tensor(image_rows, at::kLong).to(impl_->device);
      e.index_copy_(0, rows, image_features->tensor().to(impl_->device, impl_->dtype));
    }  // without features an image token is embedded as any token (HF, when generating one)
    return tensor_handle(e);
  } catch (const c10::Error& e) {
    return error{errc::invalid_argument, std::string("embedding failed in LibTorch: ") + e.what_without_backtrace()};
  }
}

namespace {

/// Checks rows and positions of one sequence; the error names the problem.
status check_rows(const llama_config& c, const kv_sequence& seq, const tensor_handle& rows,
                  const std::vector<int>& positions) {
  const auto shape = rows.shape();
  if (rows.empty() || shape.size() != 2 || shape[1] != c.hidden_size ||
      shape[0] != static_cast<std::int64_t>(positions.size()) || positions.empty())
    return error{errc::invalid_argument, "forward: rows " + shape_string(shape) + " for " +
                                             std::to_string(positions.size()) + " positions (width " +
                                             std::to_string(c.hidden_size) + ")"};
  int expect_next = seq.length();
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const int p = positions[i];
    if (p < 0 || (i > 0 && p <= positions[i - 1]))
      return error{errc::invalid_argument, "forward: positions must be ascending and non-negative"};
    if (p > expect_next)
      return error{errc::invalid_argument, "forward: position " + std::to_string(p) + " leaves a gap after " +
                                               std::to_string(expect_next - 1)};
    if (p == expect_next) ++expect_next;
  }
  if (positions.back() >= c.max_position_embeddings)
    return error{errc::capacity, "the sequence reaches position " + std::to_string(positions.back()) +
                                     ", past the model's context of " + std::to_string(c.max_position_embeddings) +
                                     " tokens"};
  return {};
}

}  // namespace

expected<tensor_handle> language_model::forward(kv_sequence& seq, const tensor_handle& rows,
                                                const std::vector<int>& positions, bool all_logits) {
  auto out = forward_batch({&seq}, {rows}, {positions}, all_logits);
  if (!out) return out.err();
  return (*out)[0];
}

expected<std::vector<tensor_handle>> language_model::forward_batch(const std::vector<kv_sequence*>& seqs,
                                                                   const std::vector<tensor_handle>& rows,
                                                                   const std::vector<std::vector<int>>& positions,
                                                                   bool all_logits) {
  if (seqs.size() != rows.size() || seqs.size() != positions.size() || seqs.empty())
    return error{errc::invalid_argument, "forward: " + std::to_string(seqs.size()) + " sequences, " +
                                             std::to_string(rows.size()) + " row sets, " +
                                             std::to_string(positions.size()) + " position lists"};
  std::vector<kv_sequence::state*> states;
  std::vector<at::Tensor> tensors;
  std::vector<const std::vector<int>*> pos;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (auto st = check_rows(impl_->cfg, *seqs[i], rows[i], positions[i]); !st) return st.err();
    for (std::size_t j = 0; j < i; ++j)
      if (seqs[j] == seqs[i]) return error{errc::invalid_argument, "forward: a sequence appears twice in one batch"};
    states.push_back(seqs[i]->s_.get());
    tensors.push_back(rows[i].tensor());
    pos.push_back(&positions[i]);
  }
  try {
    auto out = impl_->forward(states, tensors, pos, all_logits);
    std::vector<tensor_handle> handles;
    for (auto& t : out) handles.emplace_back(t);
    return handles;
  } catch (const c10::Error& e) {
    return error{errc::invalid_argument, std::string("forward failed in LibTorch: ") + e.what_without_backtrace()};
  }
}

expected<tensor_handle> language_model::append(kv_sequence& seq, const tensor_handle& rows, bool all_logits) {
  std::vector<int> positions(rows.empty() ? 0 : static_cast<std::size_t>(rows.shape()[0]));
  std::iota(positions.begin(), positions.end(), seq.length());
  return forward(seq, rows, positions, all_logits);
}

int language_model::pick(const tensor_handle& logits, const sampling_options& sampling, std::uint64_t step) const {
  const float* l = logits.data() + (logits.numel() - impl_->cfg.vocab_size);  // the last row
  const int v = impl_->cfg.vocab_size;
  if (sampling.temperature <= 0.0) return static_cast<int>(std::max_element(l, l + v) - l);
  // Softmax at the temperature, then the smallest set of most likely tokens
  // whose mass reaches top_p (HF's TopPLogitsWarper keeps at least one).
  std::vector<double> p(static_cast<std::size_t>(v));
  const double top = *std::max_element(l, l + v);
  double sum = 0;
  for (int i = 0; i < v; ++i) sum += p[i] = std::exp((l[i] - top) / sampling.temperature);
  std::vector<int> order(static_cast<std::size_t>(v));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  std::size_t keep = 0;
  double mass = 0;
  while (keep < order.size() && (keep == 0 || mass < sampling.top_p * sum)) mass += p[order[keep++]];
  std::mt19937_64 rng(sampling.seed * 0x9E3779B97F4A7C15ull + step);
  double r = std::uniform_real_distribution<double>(0.0, mass)(rng);
  for (std::size_t i = 0; i < keep; ++i) {
    r -= p[order[i]];
    if (r <= 0) return order[i];
  }
  return order[keep - 1];
}

expected<generation> language_model::generate(kv_sequence& seq, const tensor_handle& last_logits,
                                              const sampling_options& sampling, const token_hook& on_token) {
  auto out = generate_batch({&seq}, {last_logits}, sampling, on_token);
  if (!out) return out.err();
  return std::move((*out)[0]);
}

expected<std::vector<generation>> language_model::generate_batch(const std::vector<kv_sequence*>& seqs,
                                                                 const std::vector<tensor_handle>& last_logits,
                                                                 const sampling_options& sampling,
                                                                 const token_hook& on_token) {
  if (seqs.size() != last_logits.size())
    return error{errc::invalid_argument, "generate: " + std::to_string(seqs.size()) + " sequences, " +
                                             std::to_string(last_logits.size()) + " logit rows"};
  const auto start = std::chrono::steady_clock::now();
  std::vector<generation> g(seqs.size());
  std::vector<tensor_handle> logits = last_logits;
  std::vector<std::size_t> active(seqs.size());
  std::iota(active.begin(), active.end(), 0);
  for (int step = 0; step < sampling.max_new_tokens && !active.empty(); ++step) {
    // Each live sequence picks its token; those not done step forward together.
    std::vector<std::size_t> next_active;
    std::vector<kv_sequence*> step_seqs;
    std::vector<tensor_handle> step_rows;
    std::vector<std::vector<int>> step_pos;
    for (std::size_t i : active) {
      const int next = pick(logits[i], sampling, static_cast<std::uint64_t>(step));
      g[i].ids.push_back(next);
      if (next == impl_->cfg.eos_token_id) {
        g[i].stopped_on_eos = true;
        g[i].decode_ms = ms_since(start);
        continue;
      }
      if (on_token && !on_token(i, next)) {
        g[i].stopped_by_caller = true;
        g[i].decode_ms = ms_since(start);
        continue;
      }
      if (step + 1 == sampling.max_new_tokens) {
        g[i].decode_ms = ms_since(start);
        continue;
      }
      auto e = embed({next});
      if (!e) return e.err();
      next_active.push_back(i);
      step_seqs.push_back(seqs[i]);
      step_rows.push_back(*e);
      step_pos.push_back({seqs[i]->length()});
    }
    if (next_active.empty()) break;
    auto out = forward_batch(step_seqs, step_rows, step_pos);
    if (!out) return out.err();
    for (std::size_t j = 0; j < next_active.size(); ++j) logits[next_active[j]] = (*out)[j];
    active = std::move(next_active);
  }
  return g;
}

}  // namespace vlcache
