#include "core/models/vision_encoder.hpp"

#include "core/base/rename_key.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/models/detail/dense_layer.hpp"
#include "core/models/detail/torch_setup.hpp"
#include "core/models/safetensors.hpp"
#include "core/kernels/incremental_attention.hpp"
#include "core/base/device_names.hpp"
#include "core/kernels/small_gemm.hpp"
#include "core/kernels/sparse_attention.hpp"

namespace vlcache {
namespace {

using detail::dense;

struct layer_weights {
  at::Tensor ln1_w, ln1_b, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln2_w, ln2_b, fc1_w, fc1_b,
      fc2_w, fc2_b;
  dense qkv, o, fc1, fc2;  // built from the tensors above once they are on the device
};

struct clip_weights {
  at::Tensor class_emb;  // [D]
  at::Tensor patch_w;    // [D, 3, P, P]
  at::Tensor patch_w2d;  // [D, 3*P*P], the same values
  dense patch_embed;     // the convolution as a linear map of one patch
  at::Tensor pos_emb;    // [T, D]
  at::Tensor pre_w, pre_b;
  std::vector<layer_weights> layers;  // only the layers_used() first ones
  bool has_projector = false;
  at::Tensor p1_w, p1_b, p2_w, p2_b;
  dense p1, p2;
};

/// Per-stream token store: everything needed to recompute a subset.
struct stream_store {
  at::Tensor k, v;     // [layers, T, D]; k is [layers, heads, head_dim, T] for the CPU kernels
  at::Tensor out;      // [output_tokens, output_dim]
  // Layer-wise recompute only, [layers, T, ...] each: the scaled queries; the
  // layer inputs and the attention outputs each token's branches were last
  // computed from (what a token is judged against); the branches' output
  // (attention plus MLP: layer output minus input); and the running
  // softmax state (N, Z, m per head) of core/kernels/incremental_attention.
  at::Tensor q, x_in, o_ref, delta, num, z, m;
  // An 8-bit store's scales: keys [layers, heads, T], values [layers, T, heads].
  at::Tensor k_scale, v_scale;
};

std::uint64_t tensor_bytes(const at::Tensor& t) {
  return t.defined() ? static_cast<std::uint64_t>(t.numel()) * t.element_size() : 0;
}

/// The tensor names of one checkpoint layout.
struct key_names {
  std::string tower, projector;
};

key_names names_for(key_layout k) {
  switch (k) {
    case key_layout::clip: return {"vision_model.", "multi_modal_projector."};
    case key_layout::llava: return {"vision_tower.vision_model.", "multi_modal_projector."};
    case key_layout::llava_model: return {"model.vision_tower.vision_model.", "model.multi_modal_projector."};
  }
  return {};
}

expected<clip_weights> load_weights(const weight_set& w, const clip_vision_config& c, key_layout layout) {
  const key_names n = names_for(layout);
  clip_weights out;
  const std::int64_t d = c.hidden_size, p = c.patch_size, t = c.num_tokens(), i = c.intermediate_size;
  std::optional<error> failed;
  auto get = [&](const std::string& name, std::vector<std::int64_t> shape) -> at::Tensor {
    if (failed) return {};
    auto v = w.read_f32(name, shape);
    if (!v) {
      failed = v.err();
      return {};
    }
    return at::from_blob(v->data(), shape, at::kFloat).clone();
  };
  const std::string e = n.tower + "embeddings.";
  out.class_emb = get(e + "class_embedding", {d});
  out.patch_w = get(e + "patch_embedding.weight", {d, c.num_channels, p, p});
  out.pos_emb = get(e + "position_embedding.weight", {t, d});
  out.pre_w = get(n.tower + "pre_layrnorm.weight", {d});
  out.pre_b = get(n.tower + "pre_layrnorm.bias", {d});
  for (int l = 0; l < c.layers_used() && !failed; ++l) {
    const std::string pre = n.tower + "encoder.layers." + std::to_string(l) + ".";
    layer_weights lw;
    lw.ln1_w = get(pre + "layer_norm1.weight", {d});
    lw.ln1_b = get(pre + "layer_norm1.bias", {d});
    lw.q_w = get(pre + "self_attn.q_proj.weight", {d, d});
    lw.q_b = get(pre + "self_attn.q_proj.bias", {d});
    lw.k_w = get(pre + "self_attn.k_proj.weight", {d, d});
    lw.k_b = get(pre + "self_attn.k_proj.bias", {d});
    lw.v_w = get(pre + "self_attn.v_proj.weight", {d, d});
    lw.v_b = get(pre + "self_attn.v_proj.bias", {d});
    lw.o_w = get(pre + "self_attn.out_proj.weight", {d, d});
    lw.o_b = get(pre + "self_attn.out_proj.bias", {d});
    lw.ln2_w = get(pre + "layer_norm2.weight", {d});
    lw.ln2_b = get(pre + "layer_norm2.bias", {d});
    lw.fc1_w = get(pre + "mlp.fc1.weight", {i, d});
    lw.fc1_b = get(pre + "mlp.fc1.bias", {i});
    lw.fc2_w = get(pre + "mlp.fc2.weight", {d, i});
    lw.fc2_b = get(pre + "mlp.fc2.bias", {d});
    out.layers.push_back(std::move(lw));
  }
  if (c.projector_dim) {
    const std::int64_t o = *c.projector_dim;
    out.has_projector = true;
    out.p1_w = get(n.projector + "linear_1.weight", {o, d});
    out.p1_b = get(n.projector + "linear_1.bias", {o});
    out.p2_w = get(n.projector + "linear_2.weight", {o, o});
    out.p2_b = get(n.projector + "linear_2.bias", {o});
  }
  if (failed) return *failed;
  return out;
}

/// Random weights at the preset's shape, with a fixed seed. Not exactly
/// Hugging Face's CLIPPreTrainedModel._init_weights: the class token, patch
/// and position embeddings, q/k/v (d^-0.5 / sqrt(2L)) and fc1 ((2d)^-0.5)
/// follow it, but the two residual-branch outputs are scaled down by
/// sqrt(2L) as in GPT-2 (out_proj d^-0.5 / sqrt(2L), where HF has d^-0.5;
/// fc2 i^-0.5 / sqrt(2L), where HF has d^-0.5 / sqrt(2L)). That keeps the
/// residual stream of an untrained 12- or 24-layer tower from growing layer
/// by layer; the figures measured with these presets (and the peer
/// comparison's "clip" init, which copies this) depend on it.
clip_weights make_random_weights(const clip_vision_config& c, std::uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const std::int64_t d = c.hidden_size, p = c.patch_size, t = c.num_tokens(), i = c.intermediate_size;
  auto normal = [&](std::vector<std::int64_t> shape, double std) {
    return at::normal(0.0, std, shape, gen, at::TensorOptions().dtype(at::kFloat));
  };
  const double layers2 = std::sqrt(2.0 * c.num_layers);
  clip_weights w;
  w.class_emb = normal({d}, std::pow(d, -0.5));
  w.patch_w = normal({d, 3, p, p}, 0.02);
  w.pos_emb = normal({t, d}, 0.02);
  w.pre_w = at::ones({d});
  w.pre_b = at::zeros({d});
  const double attn_std = std::pow(d, -0.5) / layers2, out_std = std::pow(d, -0.5) / layers2;
  for (int l = 0; l < c.layers_used(); ++l) {
    layer_weights lw;
    lw.ln1_w = at::ones({d});
    lw.ln1_b = at::zeros({d});
    lw.q_w = normal({d, d}, attn_std);
    lw.k_w = normal({d, d}, attn_std);
    lw.v_w = normal({d, d}, attn_std);
    lw.o_w = normal({d, d}, out_std);
    lw.q_b = at::zeros({d});
    lw.k_b = at::zeros({d});
    lw.v_b = at::zeros({d});
    lw.o_b = at::zeros({d});
    lw.ln2_w = at::ones({d});
    lw.ln2_b = at::zeros({d});
    lw.fc1_w = normal({i, d}, std::pow(2.0 * d, -0.5));
    lw.fc1_b = at::zeros({i});
    lw.fc2_w = normal({d, i}, std::pow(static_cast<double>(i), -0.5) / layers2);
    lw.fc2_b = at::zeros({d});
    w.layers.push_back(std::move(lw));
  }
  if (c.projector_dim) {
    const std::int64_t o = *c.projector_dim;
    w.has_projector = true;
    w.p1_w = normal({o, d}, 0.02);
    w.p1_b = at::zeros({o});
    w.p2_w = normal({o, o}, 0.02);
    w.p2_b = at::zeros({o});
  }
  return w;
}

}  // namespace

struct vision_encoder::impl {
  clip_vision_config cfg;
  clip_weights w;
  bool random = false;
  std::string source;
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  bool cpu_kernels = true;  // CPU f32 and not aten_only
  store_precision store = store_precision::f32;  // of keys and values; f16 and i8 on the CPU kernels only
  bool half_weights = false;  // the layers' packed weights in half precision (the CPU kernels only)
  double layer_tolerance = 0.0;
  double attention_tolerance = 0.0;  // in effect: 0 = reused tokens' attention not tracked
  bool follow_attention = false;      // the attention test takes each frame's layer tolerance
  std::map<stream_id, stream_store> streams;
  std::optional<store_budget> budget;  // set when bounded
  std::map<stream_id, eviction_counts> evicted;
  std::set<stream_id> awaiting_refill;  // evicted, their next frame runs in full
  std::uint64_t peak_bytes = 0;

  /// A new stream's state, as state_bytes() counts it: keys (transposed
  /// per head for the CPU kernels) and values, in half precision with an
  /// f16 store, in int8 with their scales with an i8 store; the output
  /// tokens; with layer-wise recompute the layer state.
  void allocate(stream_store& s) const {
    if (s.k.defined()) return;
    const std::int64_t l = static_cast<std::int64_t>(w.layers.size()), t = cfg.num_tokens(), d = cfg.hidden_size,
                       h = cfg.num_heads;
    const auto kv = store == store_precision::f16 ? opts().dtype(at::kHalf)
                    : store == store_precision::i8 ? opts().dtype(at::kChar)
                                                   : opts();
    s.k = cpu_kernels ? at::zeros({l, h, cfg.head_dim(), t}, kv) : at::zeros({l, t, d}, kv);
    s.v = at::zeros({l, t, d}, kv);
    if (store == store_precision::i8) {
      s.k_scale = at::zeros({l, h, t}, opts());
      s.v_scale = at::zeros({l, t, h}, opts());
    }
    s.out = at::zeros({cfg.output_tokens(), cfg.output_dim()}, opts());
    if (layer_tolerance <= 0) return;
    for (auto* x : {&s.x_in, &s.delta}) *x = at::zeros({l, t, d}, opts());
    if (attention_tolerance <= 0) return;
    for (auto* x : {&s.q, &s.o_ref, &s.num}) *x = at::zeros({l, t, d}, opts());
    s.z = at::zeros({l, t, h}, opts());
    s.m = at::zeros({l, t, h}, opts());
  }

  std::uint64_t state_bytes() const {
    const std::int64_t l = static_cast<std::int64_t>(w.layers.size()), t = cfg.num_tokens(), d = cfg.hidden_size;
    const auto size = static_cast<std::uint64_t>(c10::elementSize(dtype));
    const std::uint64_t kv_size = store == store_precision::f16 ? 2 : store == store_precision::i8 ? 1 : size;
    std::uint64_t bytes = static_cast<std::uint64_t>(2 * l * t * d) * kv_size +
                          static_cast<std::uint64_t>(cfg.output_tokens()) * cfg.output_dim() * size;
    if (store == store_precision::i8) bytes += static_cast<std::uint64_t>(2 * l * t * cfg.num_heads) * size;
    if (layer_tolerance > 0) bytes += static_cast<std::uint64_t>(2 * l * t * d) * size;
    if (attention_tolerance > 0) bytes += static_cast<std::uint64_t>(3 * l * t * d + 2 * l * t * cfg.num_heads) * size;
    return bytes;
  }

  [[nodiscard]] at::TensorOptions opts() const { return at::TensorOptions().device(device).dtype(dtype); }

  at::Tensor act(const at::Tensor& x) const {
    return cfg.hidden_act == "quick_gelu" ? x * at::sigmoid(1.702 * x) : at::gelu(x);
  }
  at::Tensor mlp(const layer_weights& l, const at::Tensor& x) const { return l.fc2(act(l.fc1(x))); }
  at::Tensor ln(const at::Tensor& x, const at::Tensor& wt, const at::Tensor& b) const {
    return at::layer_norm(x, {cfg.hidden_size}, wt, b, cfg.layer_norm_eps);
  }
  at::Tensor project(const at::Tensor& x) const {
    if (!w.has_projector) return x;
    return w.p2(at::gelu(w.p1(x)));
  }

  at::Tensor pixels_tensor(const float* px) const {
    const std::int64_t s = cfg.image_size;
    return at::from_blob(const_cast<float*>(px), {3, s, s}, at::kFloat).to(device, dtype);
  }

  /// One encoder layer over [B, T, D], as HF's eager CLIPEncoderLayer.
  at::Tensor layer_full(const layer_weights& l, const at::Tensor& x) const {
    const std::int64_t b = x.size(0), t = x.size(1), h = cfg.num_heads, dh = cfg.head_dim();
    const double scale = std::pow(static_cast<double>(dh), -0.5);
    auto qkv = l.qkv(ln(x, l.ln1_w, l.ln1_b)).split(cfg.hidden_size, -1);
    // Contiguous heads: batched matmuls on strided views fall off the BLAS path.
    auto q = (qkv[0] * scale).view({b, t, h, dh}).transpose(1, 2).contiguous();
    auto k = qkv[1].view({b, t, h, dh}).transpose(1, 2).contiguous();
    auto v = qkv[2].view({b, t, h, dh}).transpose(1, 2).contiguous();
    auto attn = at::softmax(at::matmul(q, k.transpose(-1, -2)), -1);
    auto o = at::matmul(attn, v).transpose(1, 2).reshape({b, t, cfg.hidden_size});
    auto x1 = x + l.o(o);
    return x1 + mlp(l, ln(x1, l.ln2_w, l.ln2_b));
  }

  std::vector<full_output> full(const std::vector<const float*>& frames, bool keep_hidden) const {
    std::vector<at::Tensor> px;
    for (const float* f : frames) px.push_back(pixels_tensor(f));
    auto pix = at::stack(px);
    const std::int64_t b = pix.size(0);
    auto x = at::conv2d(pix, w.patch_w, {}, cfg.patch_size).flatten(2).transpose(1, 2);
    x = at::cat({w.class_emb.view({1, 1, -1}).expand({b, 1, cfg.hidden_size}), x}, 1) + w.pos_emb;
    x = ln(x, w.pre_w, w.pre_b);
    std::vector<at::Tensor> hidden{x};
    for (const auto& l : w.layers) {
      x = layer_full(l, x);
      if (keep_hidden) hidden.push_back(x);
    }
    auto feats = project(cfg.keep_class_token ? x : x.slice(1, 1));
    std::vector<full_output> out(static_cast<std::size_t>(b));
    for (std::int64_t i = 0; i < b; ++i) {
      out[i].features = tensor_handle(feats[i].contiguous());
      if (keep_hidden)
        for (const auto& h : hidden) out[i].hidden_states.push_back(tensor_handle(h[i].contiguous()));
    }
    return out;
  }

  struct active_frame {
    std::size_t request;
    stream_store* store;
    at::Tensor tokens;     // token indices (0 = class token) recomputed, int64
    at::Tensor outputs;    // rows of `out` recomputed, int64
    at::Tensor out_rows;   // rows of the recomputed tokens that feed `out`
    std::int64_t offset = 0, count = 0;
  };

  /// Writes the frames' new K/V rows into their stores and attends their
  /// queries to all of the stores' rows: one ATen sequence per frame.
  void attend_aten(std::vector<active_frame>& active, std::size_t l, const at::Tensor& q,
                   const at::Tensor& k, const at::Tensor& v, at::Tensor& o) const {
    const std::int64_t d = cfg.hidden_size, t = cfg.num_tokens(), h = cfg.num_heads, dh = cfg.head_dim();
    for (auto& a : active) {
      auto kl = a.store->k[static_cast<std::int64_t>(l)];
      auto vl = a.store->v[static_cast<std::int64_t>(l)];
      kl.index_copy_(0, a.tokens, k.narrow(0, a.offset, a.count));
      vl.index_copy_(0, a.tokens, v.narrow(0, a.offset, a.count));
      auto qf = q.narrow(0, a.offset, a.count).view({a.count, h, dh}).transpose(0, 1).contiguous();  // [H, m, dh]
      auto kf = kl.view({t, h, dh}).permute({1, 2, 0});                                              // [H, dh, T]
      auto vf = vl.view({t, h, dh}).transpose(0, 1);                                                 // [H, T, dh]
      auto attn = at::softmax(at::bmm(qf, kf), -1);
      o.narrow(0, a.offset, a.count).copy_(at::bmm(attn, vf).transpose(0, 1).reshape({a.count, d}));
    }
  }

  /// The same on the CPU in f32: the new value rows copied in place, then
  /// every (frame, head) item in one parallel region: its share of the
  /// store brought into cache, its new keys written, its scores, softmax
  /// and weighted sums (and the running softmax state with `keep_state`).
  void attend_cpu(std::vector<active_frame>& active, std::size_t l, const at::Tensor& q,
                  const at::Tensor& k, const at::Tensor& v, at::Tensor& o, bool keep_state = false) const {
    const std::int64_t d = cfg.hidden_size, t = cfg.num_tokens();
    const attention_shape shape{cfg.num_tokens(), cfg.num_heads, cfg.head_dim()};
    std::vector<attention_frame> frames;
    struct rows_to_store {
      const float* keys;
      const float* values;  // an 8-bit store's: quantized per head in the parallel region too
      const std::int64_t* tokens;
    };
    std::vector<rows_to_store> new_rows;  // per frame, written per head in the parallel region
    std::int64_t scores = 0;
    for (auto& a : active) {
      const std::int64_t* tok = a.tokens.data_ptr<std::int64_t>();
      const float* vn = v.data_ptr<float>() + a.offset * d;
      attention_frame f;
      f.q = q.data_ptr<float>() + a.offset * d;
      f.out = o.data_ptr<float>() + a.offset * d;
      f.m = static_cast<int>(a.count);
      f.score_offset = scores;
      if (store == store_precision::i8) {
        auto* kl = a.store->k[static_cast<std::int64_t>(l)].data_ptr<std::int8_t>();
        f.k_t8 = kl;
        f.k_scale = a.store->k_scale[static_cast<std::int64_t>(l)].data_ptr<float>();
        f.v8 = a.store->v[static_cast<std::int64_t>(l)].data_ptr<std::int8_t>();
        f.v_scale = a.store->v_scale[static_cast<std::int64_t>(l)].data_ptr<float>();
      } else if (store == store_precision::f16) {
        auto* kl = reinterpret_cast<std::uint16_t*>(a.store->k[static_cast<std::int64_t>(l)].data_ptr<at::Half>());
        auto* vl = reinterpret_cast<std::uint16_t*>(a.store->v[static_cast<std::int64_t>(l)].data_ptr<at::Half>());
        for (std::int64_t j = 0; j < a.count; ++j) to_half(vn + j * d, vl + tok[j] * d, d);
        f.k_t16 = kl;
        f.v16 = vl;
      } else {
        float* kl = a.store->k[static_cast<std::int64_t>(l)].data_ptr<float>();
        float* vl = a.store->v[static_cast<std::int64_t>(l)].data_ptr<float>();
        for (std::int64_t j = 0; j < a.count; ++j) std::memcpy(vl + tok[j] * d, vn + j * d, sizeof(float) * d);
        f.k_t = kl;
        f.v = vl;
      }
      frames.push_back(f);
      new_rows.push_back({k.data_ptr<float>() + a.offset * d, vn, tok});
      scores += a.count * cfg.num_heads * t;
    }
    auto s = at::empty({scores / t, t}, q.options());
    const std::int64_t h = cfg.num_heads, dh = cfg.head_dim();
    const std::int64_t items = static_cast<std::int64_t>(frames.size()) * h;
    const auto layer = static_cast<std::int64_t>(l);
    // Each (frame, head) item start to end in one parallel region: scores,
    // softmax, weighted sums and, for layer-wise recompute, the recomputed
    // queries' running softmax state (m, Z and N = Z * output per head).
    at::parallel_for(0, items, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<float> row_max, row_sum;
      for (std::int64_t i = b; i < e; ++i) {
        const auto& f = frames[static_cast<std::size_t>(i / h)];
        const int head = static_cast<int>(i % h);
        attention_prefetch(f, shape, head);
        const auto& nr = new_rows[static_cast<std::size_t>(i / h)];
        store_keys(f, shape, nr.keys, nr.tokens, f.m, head);
        if (f.v8 != nullptr) store_values_i8(f, shape, nr.values, nr.tokens, f.m, head);
        attention_scores(f, shape, head, s.data_ptr<float>());
        row_max.resize(static_cast<std::size_t>(f.m));
        row_sum.resize(static_cast<std::size_t>(f.m));
        attention_softmax(f, shape, head, s.data_ptr<float>(), row_max.data(), row_sum.data());
        attention_apply(f, shape, head, s.data_ptr<float>());
        if (!keep_state) continue;
        const auto& a = active[static_cast<std::size_t>(i / h)];
        auto& st = *a.store;
        const std::int64_t* tok = a.tokens.data_ptr<std::int64_t>();
        float* m = st.m[layer].data_ptr<float>();
        float* z = st.z[layer].data_ptr<float>();
        float* num = st.num[layer].data_ptr<float>();
        for (int r = 0; r < f.m; ++r) {
          m[tok[r] * h + head] = row_max[static_cast<std::size_t>(r)];
          z[tok[r] * h + head] = row_sum[static_cast<std::size_t>(r)];
          const float* out = f.out + static_cast<std::int64_t>(r) * d + head * dh;
          float* dst = num + tok[r] * d + head * dh;
          for (std::int64_t j = 0; j < dh; ++j) dst[j] = out[j] * row_sum[static_cast<std::size_t>(r)];
        }
      }
    });
  }

  /// The frame's token rows [T, D] after patch embedding and pre-LN: all
  /// patches (under 1 % of a full forward), the layer-wise path's first input.
  at::Tensor embed_all(const float* pixels) const {
    const std::int64_t n = cfg.num_patches(), p = cfg.patch_size, g = cfg.grid_side(), d = cfg.hidden_size;
    auto patches = pixels_tensor(pixels).view({3, g, p, g, p}).permute({1, 3, 0, 2, 4}).reshape({n, 3 * p * p});
    auto e = at::cat({w.class_emb.view({1, d}), w.patch_embed(patches.contiguous())}, 0) + w.pos_emb;
    return ln(e, w.pre_w, w.pre_b);
  }

  /// Rows of `now` that moved from `ref` by more than `tolerance`.
  static at::Tensor moved_rows(const at::Tensor& now, const at::Tensor& ref, double tolerance) {
    return (now - ref).norm(2, {1}) > ref.norm(2, {1}) * tolerance;
  }

  /// The same on the CPU in plain loops, for rows i of `now` against row
  /// ref_rows[i] of `ref`: the indices that moved. A few small ATen calls
  /// per layer cost more than this arithmetic.
  static std::vector<std::int64_t> moved_cpu(const at::Tensor& now, const at::Tensor& ref, const std::int64_t* ref_rows,
                                             double tolerance) {
    const std::int64_t rows = now.size(0), d = now.size(1);
    const float* a = now.data_ptr<float>();
    const float* b = ref.data_ptr<float>();
    const double tol2 = tolerance * tolerance;
    std::vector<std::int64_t> moved;
    for (std::int64_t i = 0; i < rows; ++i)
      if (row_moved(a + i * d, b + ref_rows[i] * d, d, tol2)) moved.push_back(i);
    return moved;
  }

  /// |x - ref|^2 > tol2 |ref|^2 over one row of width d.
  static bool row_moved(const float* x, const float* ref, std::int64_t d, double tol2) {
    float diff = 0, norm = 0;
#pragma omp simd reduction(+ : diff, norm)
    for (std::int64_t j = 0; j < d; ++j) {
      const float e = x[j] - ref[j];
      diff += e * e;
      norm += ref[j] * ref[j];
    }
    return diff > tol2 * norm;
  }

  /// One pass over a frame's rows on the CPU, in parallel: with `delta`,
  /// every row of x moves on by its branch output (x += delta); with
  /// `next_in`, flags[i] says whether row i then differs from the input
  /// its branches were last computed with by more than the tolerance (or
  /// is forced). Folding the residual step into the next layer's test reads
  /// each row once: both are bound by memory, not arithmetic.
  void advance_and_test_cpu(float* x, const float* delta, const float* next_in, const std::vector<char>& forced,
                            double tolerance, std::vector<char>& flags) const {
    const std::int64_t rows = cfg.num_tokens(), d = cfg.hidden_size;
    const double tol2 = tolerance * tolerance;
    flags.assign(static_cast<std::size_t>(rows), 0);
    at::parallel_for(0, rows, 16, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        float* xi = x + i * d;
        if (delta != nullptr) {
          const float* di = delta + i * d;
#pragma omp simd
          for (std::int64_t j = 0; j < d; ++j) xi[j] += di[j];
        }
        if (next_in == nullptr) continue;
        flags[static_cast<std::size_t>(i)] =
            forced[static_cast<std::size_t>(i)] != 0 || row_moved(xi, next_in + i * d, d, tol2) ? 1 : 0;
      }
    });
  }

  /// Layer-wise recompute (layer_tolerance > 0), in the manner of Eventful
  /// Transformers: every token's residual stream stays current, only the
  /// branches (attention, MLP) are cached. At each layer a token's branches
  /// are recomputed when it is a gate miss, when its input moved past the
  /// tolerance since they were last computed there, or when its attention
  /// output did past attention_tolerance (the keys and values it attends
  /// to changed; not tested at 0); everyone else adds its stored branch
  /// output to its current input. Reused queries' attention is kept exact
  /// incrementally on the CPU (core/kernels/incremental_attention), recomputed in
  /// full elsewhere.
  std::vector<frame_result> sparse_layerwise(const std::vector<frame_request>& batch,
                                             const std::vector<std::vector<std::int64_t>>& positions,
                                             const std::vector<bool>& full_frame) {
    const std::int64_t d = cfg.hidden_size, t = cfg.num_tokens(), h = cfg.num_heads, dh = cfg.head_dim();
    const auto layers = static_cast<std::int64_t>(w.layers.size());
    const double scale = std::pow(static_cast<double>(dh), -0.5);
    const auto idx_opts = at::TensorOptions().dtype(at::kLong).device(device);
    // Reused queries: incremental updates on the CPU kernels' path; every
    // query over all keys on an accelerator (cheap there) and for head
    // widths the kernel does not take.
    const bool attention = attention_tolerance > 0;  // reused queries' attention tracked
    const bool incremental = attention && cpu_kernels && dh % 8 == 0;
    std::vector<frame_result> results(batch.size());
    std::vector<active_frame> active;
    std::vector<at::Tensor> x;       // per active frame: its current rows [T, D]
    std::vector<at::Tensor> forced;  // per active frame: tokens recomputed at every layer whatever moved
    std::vector<std::vector<char>> forced_flags;  // the same as one flag per token
    std::vector<double> tol, att_tol;  // per active frame: its tolerances (a request may set its own)
    for (std::size_t r = 0; r < batch.size(); ++r) {
      const auto& req = batch[r];
      results[r].stream = req.stream;
      stream_store& s = streams[req.stream];
      allocate(s);
      if (!full_frame[r] && positions[r].empty()) continue;  // unchanged frame: no encoder work
      active_frame a;
      a.request = r;
      a.store = &s;
      active.push_back(a);
      tol.push_back(req.layer_tolerance > 0 ? req.layer_tolerance : layer_tolerance);
      // The attention test follows the frame's tolerance unless it was set apart.
      att_tol.push_back(!attention ? 0.0 : follow_attention && req.layer_tolerance > 0 ? req.layer_tolerance
                                                                                       : attention_tolerance);
      x.push_back(embed_all(req.pixels));
      // Recomputed at every layer whatever moved: the class token (it sees
      // every change) and the gate's misses; every token on a full frame.
      std::vector<char> flags(static_cast<std::size_t>(t), full_frame[r] ? 1 : 0);
      flags[0] = 1;
      for (auto q : positions[r]) flags[static_cast<std::size_t>(q + 1)] = 1;
      std::vector<std::int64_t> tok;
      for (std::int64_t i = 0; i < t; ++i)
        if (flags[static_cast<std::size_t>(i)]) tok.push_back(i);
      forced.push_back(at::tensor(tok, at::kLong).to(device));
      forced_flags.push_back(std::move(flags));
      results[r].full = full_frame[r];
    }
    if (active.empty()) {
      for (std::size_t r = 0; r < batch.size(); ++r)
        results[r].features = tensor_handle(streams[batch[r].stream].out.clone());
      return results;
    }
    // CPU kernels: who moved at the next layer, per frame (one flag a token).
    std::vector<std::vector<char>> moved_flags(active.size());
    if (cpu_kernels)
      for (std::size_t fi = 0; fi < active.size(); ++fi)
        advance_and_test_cpu(x[fi].data_ptr<float>(), nullptr, active[fi].store->x_in[0].data_ptr<float>(),
                             forced_flags[fi], tol[fi], moved_flags[fi]);

    for (std::int64_t l = 0; l < layers; ++l) {
      const auto& lw = w.layers[static_cast<std::size_t>(l)];
      // Who recomputes the attention branch's inputs (q, k, v) at this layer.
      std::vector<at::Tensor> rows;
      std::int64_t offset = 0;
      std::vector<at::Tensor> others(active.size());
      for (std::size_t fi = 0; fi < active.size(); ++fi) {
        auto& a = active[fi];
        // The reused tokens (`others`) matter only to the attention test.
        if (cpu_kernels) {
          std::vector<std::int64_t> moved, rest;
          for (std::int64_t i = 0; i < t; ++i) {
            if (moved_flags[fi][static_cast<std::size_t>(i)]) moved.push_back(i);
            else if (attention) rest.push_back(i);
          }
          a.tokens = at::tensor(moved, at::kLong);
          if (attention) others[fi] = at::tensor(rest, at::kLong);
        } else {
          auto moved = moved_rows(x[fi], a.store->x_in[l], tol[fi]);
          moved.index_fill_(0, forced[fi], true);  // the gate's misses, at every layer
          moved.index_fill_(0, at::zeros({1}, idx_opts), true);  // the class token sees every change
          a.tokens = moved.nonzero().view({-1});
          if (attention) others[fi] = moved.logical_not().nonzero().view({-1});
        }
        a.offset = offset;
        a.count = a.tokens.numel();
        offset += a.count;
        rows.push_back(x[fi].index_select(0, a.tokens));
      }
      auto xs = at::cat(rows, 0);
      auto qkv = lw.qkv(ln(xs, lw.ln1_w, lw.ln1_b)).split(d, -1);
      auto q = (qkv[0] * scale).contiguous();
      auto k = qkv[1].contiguous();
      auto v = qkv[2].contiguous();
      std::vector<at::Tensor> k_old(active.size()), v_old(active.size()), k_new(active.size());
      for (std::size_t fi = 0; fi < active.size(); ++fi) {
        auto& a = active[fi];
        auto& s = *a.store;
        if (attention) s.q[l].index_copy_(0, a.tokens, q.narrow(0, a.offset, a.count));
        s.x_in[l].index_copy_(0, a.tokens, xs.narrow(0, a.offset, a.count));
        if (!incremental || others[fi].numel() == 0) continue;
        // Before the new rows overwrite them: the reused queries' update
        // subtracts the old terms of the changed keys and values.
        // Keys as the kernel takes them: [heads, head_dim, count rounded up to 8].
        const std::int64_t pad = (a.count + 7) / 8 * 8 - a.count;
        v_old[fi] = s.v[l].index_select(0, a.tokens);
        k_old[fi] = at::constant_pad_nd(s.k[l].index_select(2, a.tokens), {0, pad}).contiguous();
        k_new[fi] = at::constant_pad_nd(k.narrow(0, a.offset, a.count).t().reshape({h, dh, a.count}), {0, pad})
                        .contiguous();
      }
      auto o = at::empty_like(q);
      if (cpu_kernels) attend_cpu(active, static_cast<std::size_t>(l), q, k, v, o, attention);
      else attend_aten(active, static_cast<std::size_t>(l), q, k, v, o);

      // Who recomputes the branches: the above, and the reused tokens
      // whose attention output moved.
      std::vector<at::Tensor> post_x, post_o, post_tok;
      for (std::size_t fi = 0; fi < active.size(); ++fi) {
        auto& a = active[fi];
        auto& s = *a.store;
        at::Tensor tok = a.tokens, o_f = o.narrow(0, a.offset, a.count);
        const std::int64_t n_o = attention ? others[fi].numel() : 0;
        if (n_o > 0) {
          at::Tensor o_other;
          if (incremental) {
            o_other = at::empty({n_o, d}, opts());
            const attention_state st{s.q[l].data_ptr<float>(), s.k[l].data_ptr<float>(), s.v[l].data_ptr<float>(),
                                     s.num[l].data_ptr<float>(), s.z[l].data_ptr<float>(), s.m[l].data_ptr<float>()};
            const attention_change ch{k_old[fi].data_ptr<float>(), v_old[fi].data_ptr<float>(),
                                      k_new[fi].data_ptr<float>(), v.data_ptr<float>() + a.offset * d,
                                      static_cast<int>(a.count)};
            const attention_shape shape{static_cast<int>(t), static_cast<int>(h), static_cast<int>(dh)};
            const std::int64_t* who = others[fi].data_ptr<std::int64_t>();
            float* dst = o_other.data_ptr<float>();
            at::parallel_for(0, n_o * h, 16, [&](std::int64_t b, std::int64_t e) {
              attention_update(st, shape, ch, who, n_o, b, e, dst);
            });
          } else {
            auto qo = s.q[l].index_select(0, others[fi]).view({n_o, h, dh}).transpose(0, 1);
            auto kf = cpu_kernels ? s.k[l] : s.k[l].view({t, h, dh}).permute({1, 2, 0});
            auto vf = s.v[l].view({t, h, dh}).transpose(0, 1);
            o_other = at::bmm(at::softmax(at::bmm(qo, kf), -1), vf).transpose(0, 1).reshape({n_o, d});
          }
          auto join = cpu_kernels
                          ? at::tensor(moved_cpu(o_other, s.o_ref[l], others[fi].data_ptr<std::int64_t>(),
                                                 att_tol[fi]),
                                       at::kLong)
                          : moved_rows(o_other, s.o_ref[l].index_select(0, others[fi]), att_tol[fi])
                                .nonzero()
                                .view({-1});
          if (join.numel() > 0) {
            tok = at::cat({tok, others[fi].index_select(0, join)}, 0);
            o_f = at::cat({o_f, o_other.index_select(0, join)}, 0);
          }
        }
        post_tok.push_back(tok);
        results[a.request].layer_tokens += tok.numel() - 1;
        if (!attention) continue;
        s.o_ref[l].index_copy_(0, tok, o_f);
        post_x.push_back(x[fi].index_select(0, tok));
        post_o.push_back(o_f);
      }
      // Without the attention test nobody joins: the branches' rows are the
      // attention's, already gathered in order.
      auto xp = attention ? at::cat(post_x, 0) : xs;
      auto mid = xp + lw.o(attention ? at::cat(post_o, 0) : o);
      auto delta = mid + mlp(lw, ln(mid, lw.ln2_w, lw.ln2_b)) - xp;
      std::int64_t at_row = 0;
      for (std::size_t fi = 0; fi < active.size(); ++fi) {
        auto& s = *active[fi].store;
        const std::int64_t n = post_tok[fi].numel();
        s.delta[l].index_copy_(0, post_tok[fi], delta.narrow(0, at_row, n));
        at_row += n;
        // Every token's residual stream moves on (and on the CPU, the next
        // layer's test in the same pass).
        if (cpu_kernels)
          advance_and_test_cpu(x[fi].data_ptr<float>(), s.delta[l].data_ptr<float>(),
                               l + 1 < layers ? s.x_in[l + 1].data_ptr<float>() : nullptr, forced_flags[fi],
                               tol[fi], moved_flags[fi]);
        else
          x[fi] = x[fi] + s.delta[l];
      }
    }
    // Every token's final state moved with its residual stream: project all
    // (a gate here would leave exactly the residual's fidelity behind).
    for (std::size_t fi = 0; fi < active.size(); ++fi) {
      auto& a = active[fi];
      a.store->out.copy_(project(cfg.keep_class_token ? x[fi] : x[fi].slice(0, 1)));
      results[a.request].computed = static_cast<int>(forced[fi].numel()) - 1;
    }
    for (std::size_t r = 0; r < batch.size(); ++r)
      results[r].features = tensor_handle(streams[batch[r].stream].out.clone());
    return results;
  }

  std::vector<frame_result> sparse(const std::vector<frame_request>& batch,
                                   const std::vector<std::vector<std::int64_t>>& positions,
                                   const std::vector<bool>& full_frame) {
    const std::int64_t d = cfg.hidden_size, n = cfg.num_patches();
    const std::int64_t p = cfg.patch_size, g = cfg.grid_side();
    const double scale = std::pow(static_cast<double>(cfg.head_dim()), -0.5);
    const auto idx_opts = at::TensorOptions().dtype(at::kLong).device(device);
    std::vector<frame_result> results(batch.size());
    std::vector<active_frame> active;
    std::vector<at::Tensor> embeds;
    std::int64_t offset = 0;

    for (std::size_t r = 0; r < batch.size(); ++r) {
      const auto& req = batch[r];
      results[r].stream = req.stream;
      stream_store& s = streams[req.stream];
      allocate(s);
      const auto& pos = positions[r];
      if (!full_frame[r] && pos.empty()) continue;  // unchanged frame: no encoder work

      // Token indices: the class token first, then the patches (position + 1).
      std::vector<std::int64_t> tok{0};
      for (auto q : pos) tok.push_back(q + 1);
      active_frame a;
      a.request = r;
      a.store = &s;
      a.tokens = at::tensor(tok, at::kLong).to(device);
      a.offset = offset;
      a.count = static_cast<std::int64_t>(tok.size());
      if (cfg.keep_class_token) {
        a.outputs = a.tokens;
        a.out_rows = at::arange(a.count, idx_opts);
      } else {
        a.outputs = at::tensor(pos, at::kLong).to(device);
        a.out_rows = at::arange(1, a.count, idx_opts);
      }
      // Patch embedding of the selected patches only: the convolution is a
      // matrix product over each patch's (channel, row, column) pixels.
      at::Tensor sel;
      if (cpu_kernels) {  // copy out just the selected patches, (channel, row, column) order
        sel = at::empty({static_cast<std::int64_t>(pos.size()), 3 * p * p}, opts());
        float* dst = sel.data_ptr<float>();
        const std::int64_t side = cfg.image_size;
        for (std::size_t i = 0; i < pos.size(); ++i) {
          const std::int64_t y0 = (pos[i] / g) * p, x0 = (pos[i] % g) * p;
          for (std::int64_t ch = 0; ch < 3; ++ch)
            for (std::int64_t ky = 0; ky < p; ++ky, dst += p)
              std::memcpy(dst, req.pixels + (ch * side + y0 + ky) * side + x0, sizeof(float) * p);
        }
      } else {
        auto patches = pixels_tensor(req.pixels).view({3, g, p, g, p}).permute({1, 3, 0, 2, 4}).reshape({n, 3 * p * p});
        sel = patches.index_select(0, a.tokens.slice(0, 1) - 1);
      }
      auto e = at::cat({w.class_emb.view({1, d}), w.patch_embed(sel)}, 0) + w.pos_emb.index_select(0, a.tokens);
      embeds.push_back(e);
      offset += a.count;
      results[r].computed = static_cast<int>(pos.size());
      results[r].layer_tokens = static_cast<std::int64_t>(pos.size()) * static_cast<std::int64_t>(w.layers.size());
      results[r].full = full_frame[r];
      active.push_back(std::move(a));
    }

    if (!active.empty()) {
      auto x = ln(at::cat(embeds, 0), w.pre_w, w.pre_b);  // [sum of tokens, D]
      for (std::size_t l = 0; l < w.layers.size(); ++l) {
        const auto& lw = w.layers[l];
        auto qkv = lw.qkv(ln(x, lw.ln1_w, lw.ln1_b)).split(d, -1);
        auto q = qkv[0] * scale;
        auto k = qkv[1].contiguous();
        auto v = qkv[2].contiguous();
        auto o = at::empty_like(q);
        if (cpu_kernels) attend_cpu(active, l, q, k, v, o);
        else attend_aten(active, l, q, k, v, o);
        x = x + lw.o(o);
        x = x + mlp(lw, ln(x, lw.ln2_w, lw.ln2_b));
      }
      for (auto& a : active) {
        auto xf = x.narrow(0, a.offset, a.count);
        a.store->out.index_copy_(0, a.outputs, project(xf.index_select(0, a.out_rows)));
      }
    }
    // Results are snapshots: the store keeps changing with later frames.
    for (std::size_t r = 0; r < batch.size(); ++r)
      results[r].features = tensor_handle(streams[batch[r].stream].out.clone());
    return results;
  }
};

vision_encoder::vision_encoder(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
vision_encoder::~vision_encoder() = default;

expected<std::unique_ptr<vision_encoder>> vision_encoder::load(const std::string& model,
                                                              const encoder_options& options) {
  auto device = detail::parse_device(options.device);
  if (!device) return device.err();
  auto dtype = detail::parse_dtype(options.dtype, *device);
  if (!dtype) return dtype.err();
  auto p = std::make_unique<impl>();
  p->device = *device;
  p->dtype = *dtype;
  p->cpu_kernels = !options.aten_only && p->device.is_cpu() && p->dtype == at::kFloat;
  if (!(options.layer_tolerance >= 0) || !std::isfinite(options.layer_tolerance))
    return error{errc::invalid_argument, "layer_tolerance must be a finite number >= 0 (0 = off), got " +
                                             std::to_string(options.layer_tolerance)};
  p->layer_tolerance = options.layer_tolerance;
  if (!std::isfinite(options.attention_tolerance))
    return error{errc::invalid_argument, "attention_tolerance must be a finite number (negative: as layer_tolerance; "
                                         "0: not tested), got " + std::to_string(options.attention_tolerance)};
  if (options.attention_tolerance > 0 && options.layer_tolerance <= 0)
    return error{errc::invalid_argument, "attention_tolerance " + std::to_string(options.attention_tolerance) +
                                             " needs layer-wise recompute (layer_tolerance > 0)"};
  p->attention_tolerance = options.attention_tolerance < 0 ? options.layer_tolerance : options.attention_tolerance;
  p->follow_attention = options.attention_tolerance < 0;
  const auto store = parse_store_precision(options.store_dtype);
  if (!store) return error{errc::invalid_argument, "store_dtype " + store.err().message};
  p->store = *store;
  const bool compact_store = p->store != store_precision::f32;
  if (compact_store && !p->cpu_kernels)
    return error{errc::invalid_argument, "store_dtype " + options.store_dtype +
                                             " is for the CPU kernels (device cpu, dtype f32); on an "
                                             "accelerator set dtype instead"};
  if (p->store == store_precision::f16 && p->cfg.head_dim() % 8 != 0)
    return error{errc::invalid_argument, "store_dtype f16 needs a head width that is a multiple of 8, not " +
                                             std::to_string(p->cfg.head_dim())};
  // Layer-wise recompute's attention test reads the stored keys and values
  // as f32 (the reused queries' incremental update); its input test alone
  // reads them only through the attention kernels, which take either store.
  if (compact_store && options.layer_tolerance > 0 && p->attention_tolerance > 0)
    return error{errc::invalid_argument, "store_dtype " + options.store_dtype +
                                             " does not combine with layer_tolerance's attention test yet "
                                             "(attention_tolerance " + std::to_string(p->attention_tolerance) +
                                             "); set attention_tolerance = 0 for the input test alone"};
  const auto weight_half = parse_half_name(options.weight_dtype);
  if (!weight_half) return error{errc::invalid_argument, "weight_dtype " + weight_half.err().message};
  const bool half_weights = *weight_half;
  if (half_weights && !p->cpu_kernels)
    return error{errc::invalid_argument, "weight_dtype f16 is for the CPU kernels (device cpu, dtype f32); on an "
                                         "accelerator set dtype instead"};
  if (half_weights && !packed_weight::half_supported())
    return error{errc::invalid_argument, "weight_dtype f16 needs F16C, which this build's target CPU lacks"};
  p->half_weights = half_weights;
  p->source = model;
  try {
    if (is_preset_name(model)) {
      auto cfg = preset_config(model);
      if (!cfg) return cfg.err();
      p->cfg = *cfg;
      p->w = make_random_weights(p->cfg, options.seed != 0 ? options.seed : detail::preset_seed(model));
      p->random = true;
    } else {
      namespace fs = std::filesystem;
      if (!fs::is_directory(model))
        return error{errc::not_found, "model '" + model +
                                          "' is neither a preset (" + std::string(preset_names) + ") nor a folder"};
      const std::string config_path = (fs::path(model) / "config.json").string();
      std::ifstream in(config_path);
      if (!in) return error{errc::not_found, config_path + ": missing (a Hugging Face snapshot has one)"};
      std::stringstream text;
      text << in.rdbuf();
      auto cfg = parse_clip_config(text.str(), config_path);
      if (!cfg) return cfg.err();
      p->cfg = *cfg;
      auto weights = weight_set::open_folder(model);
      if (!weights) return weights.err();
      std::optional<key_layout> layout;
      for (auto k : {key_layout::clip, key_layout::llava, key_layout::llava_model})
        if (weights->contains(names_for(k).tower + "embeddings.class_embedding")) layout = k;
      if (!layout)
        return error{errc::not_found, model + ": no CLIP vision tower among the weights (looked for "
                                              "vision_model.*, vision_tower.vision_model.*, "
                                              "model.vision_tower.vision_model.*)"};
      auto w = load_weights(*weights, p->cfg, *layout);
      if (!w) return error{w.err().code, w.err().message + " (layout " + to_string(*layout) + ")"};
      p->w = std::move(*w);
    }
    p->w.patch_w2d = p->w.patch_w.reshape({p->cfg.hidden_size, -1});
    auto move = [&](at::Tensor& t) {
      if (t.defined()) t = t.to(p->device, p->dtype).contiguous();
    };
    for (auto* t : {&p->w.class_emb, &p->w.patch_w, &p->w.patch_w2d, &p->w.pos_emb, &p->w.pre_w,
                    &p->w.pre_b, &p->w.p1_w, &p->w.p1_b, &p->w.p2_w, &p->w.p2_b})
      move(*t);
    for (auto& l : p->w.layers)
      for (auto* t : {&l.ln1_w, &l.ln1_b, &l.q_w, &l.q_b, &l.k_w, &l.k_b, &l.v_w, &l.v_b, &l.o_w,
                      &l.o_b, &l.ln2_w, &l.ln2_b, &l.fc1_w, &l.fc1_b, &l.fc2_w, &l.fc2_b})
        move(*t);
    p->w.patch_embed = {p->w.patch_w2d, at::zeros({p->cfg.hidden_size}, p->w.patch_w2d.options()), {}};
    p->w.patch_embed.prepare(options.aten_only);
    for (auto& l : p->w.layers) {
      l.qkv = {at::cat({l.q_w, l.k_w, l.v_w}, 0), at::cat({l.q_b, l.k_b, l.v_b}, 0), {}};
      l.o = {l.o_w, l.o_b, {}};
      l.fc1 = {l.fc1_w, l.fc1_b, {}};
      l.fc2 = {l.fc2_w, l.fc2_b, {}};
      for (auto* d : {&l.qkv, &l.o, &l.fc1, &l.fc2}) d->prepare(options.aten_only, half_weights);
    }
    if (p->w.has_projector) {
      p->w.p1 = {p->w.p1_w, p->w.p1_b, {}};
      p->w.p2 = {p->w.p2_w, p->w.p2_b, {}};
      p->w.p1.prepare(options.aten_only);
      p->w.p2.prepare(options.aten_only);
    }
    // The per-projection tensors now live in the dense layers (q, k, v fused):
    // keeping them too would hold every weight twice.
    for (auto& l : p->w.layers)
      for (auto* t : {&l.q_w, &l.q_b, &l.k_w, &l.k_b, &l.v_w, &l.v_b, &l.o_w, &l.o_b, &l.fc1_w, &l.fc1_b,
                      &l.fc2_w, &l.fc2_b})
        *t = at::Tensor();
    for (auto* t : {&p->w.p1_w, &p->w.p1_b, &p->w.p2_w, &p->w.p2_b}) *t = at::Tensor();
  } catch (const c10::Error& e) {
    return error{errc::io_error, "loading '" + model + "' failed in LibTorch: " + e.what_without_backtrace()};
  }
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.store_budget.capacity_bytes > 0) {
    if (auto st = options.store_budget.validate(); !st) return st.err();
    if (options.store_budget.capacity_bytes < p->state_bytes())
      return error{errc::invalid_config, "the token store budget of " +
                                             std::to_string(options.store_budget.capacity_bytes) +
                                             " bytes holds no stream: one stream's state takes " +
                                             std::to_string(p->state_bytes()) + " bytes with this model"};
    p->budget.emplace(options.store_budget);
  }
  at::set_num_threads(threads);
  return std::unique_ptr<vision_encoder>(new vision_encoder(std::move(p)));
}

const clip_vision_config& vision_encoder::config() const noexcept { return impl_->cfg; }
bool vision_encoder::random_weights() const noexcept { return impl_->random; }
int vision_encoder::threads() const { return at::get_num_threads(); }
double vision_encoder::layer_tolerance() const noexcept { return impl_->layer_tolerance; }
double vision_encoder::attention_tolerance() const noexcept { return impl_->attention_tolerance; }

std::string vision_encoder::description() const {
  const auto& c = impl_->cfg;
  std::ostringstream os;
  os << (impl_->random ? "RANDOM-WEIGHT preset '" : "weights from '") << impl_->source << "': "
     << c.image_size << "/" << c.patch_size << ", width " << c.hidden_size << ", "
     << c.layers_used() << " of " << c.num_layers << " layers run";
  if (c.projector_dim) os << ", projector to " << *c.projector_dim;
  if (impl_->layer_tolerance > 0) {
    os << ", layer-wise recompute at tolerance " << impl_->layer_tolerance;
    if (impl_->attention_tolerance != impl_->layer_tolerance)
      os << (impl_->attention_tolerance > 0 ? ", attention output at " + std::to_string(impl_->attention_tolerance)
                                            : std::string(", attention output not tracked"));
  }
  if (impl_->store != store_precision::f32) os << ", " << to_string(impl_->store) << " token store";
  if (impl_->half_weights) os << ", f16 weights";
  os << ", " << impl_->device.str() << " " << c10::toString(impl_->dtype);
  return os.str();
}

expected<std::vector<full_output>> vision_encoder::encode_full(const std::vector<const float*>& frames,
                                                               bool hidden_states) {
  if (frames.empty()) return std::vector<full_output>{};
  for (const float* f : frames)
    if (f == nullptr) return error{errc::invalid_argument, "encode_full: a frame without pixels"};
  try {
    at::NoGradGuard no_grad;
    return impl_->full(frames, hidden_states);
  } catch (const c10::Error& e) {
    return error{errc::invalid_argument, std::string("encoder forward failed: ") + e.what_without_backtrace()};
  }
}

expected<std::vector<frame_result>> vision_encoder::encode(const std::vector<frame_request>& batch) {
  auto& im = *impl_;
  std::set<stream_id> seen;
  for (const auto& req : batch)
    if (!seen.insert(req.stream).second)
      return error{errc::invalid_argument, "stream " + std::to_string(req.stream) + " has two frames in one batch"};
  if (im.budget && batch.size() > 1) {
    const auto fit = static_cast<std::size_t>(std::max<std::uint64_t>(1, im.budget->config().capacity_bytes / im.state_bytes()));
    if (batch.size() > fit) {
      // More streams than states fit in the budget: in turns, each turn's
      // streams kept while it runs (a later turn may evict an earlier one's).
      std::vector<frame_result> all;
      for (std::size_t i = 0; i < batch.size(); i += fit) {
        const std::vector<frame_request> turn(batch.begin() + static_cast<std::ptrdiff_t>(i),
                                              batch.begin() + static_cast<std::ptrdiff_t>(std::min(i + fit, batch.size())));
        auto r = encode(turn);
        if (!r) return r.err();
        for (auto& x : *r) all.push_back(std::move(x));
      }
      return all;
    }
  }
  const int n = impl_->cfg.num_patches();
  std::vector<std::vector<std::int64_t>> positions(batch.size());
  std::vector<bool> full(batch.size());
  for (std::size_t r = 0; r < batch.size(); ++r) {
    const auto& req = batch[r];
    const std::string who = "stream " + std::to_string(req.stream);
    if (req.pixels == nullptr) return error{errc::invalid_argument, who + ": frame without pixels"};
    if (!(req.layer_tolerance >= 0) || !std::isfinite(req.layer_tolerance))
      return error{errc::invalid_argument, who + ": layer_tolerance must be a finite number >= 0 (0: the encoder's), got " +
                                               std::to_string(req.layer_tolerance)};
    if (req.layer_tolerance > 0 && impl_->layer_tolerance <= 0)
      return error{errc::invalid_argument, who + ": a frame's layer_tolerance needs an encoder loaded with "
                                               "layer-wise recompute (its store keeps no layer state)"};
    full[r] = req.full || !has_stream(req.stream);
    if (full[r]) {
      positions[r].resize(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) positions[r][i] = i;
      continue;
    }
    std::vector<bool> marked(static_cast<std::size_t>(n), false);
    for (int q : req.positions) {
      if (q < 0 || q >= n)
        return error{errc::invalid_argument, who + ": position " + std::to_string(q) +
                                                 " is outside the " + std::to_string(n) + " patches"};
      marked[q] = true;
    }
    for (int i = 0; i < n; ++i)
      if (marked[i]) positions[r].push_back(i);
  }
  std::set<stream_id> denied;  // streams the budget gives no state: they run in full and keep nothing
  if (im.budget) {  // room for the batch's new states first, by the policy
    std::vector<stream_id> newcomers;
    for (const auto& req : batch)
      if (!has_stream(req.stream)) newcomers.push_back(req.stream);
    auto plan = im.budget->plan_room(newcomers, im.state_bytes(), seen);
    if (!plan) return error{plan.err().code, "encoder: " + plan.err().message};
    for (stream_id v : plan->victims) {
      im.streams.erase(v);
      im.budget->charge(v, 0);  // its history stays: it may earn a state back
      ++im.evicted[v].evictions;
      im.awaiting_refill.insert(v);
    }
    denied = std::move(plan->denied);
  }
  try {
    at::NoGradGuard no_grad;
    auto out = im.layer_tolerance > 0 ? im.sparse_layerwise(batch, positions, full) : im.sparse(batch, positions, full);
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto& r = out[i];
      const bool no_room = denied.count(r.stream) != 0;
      if (im.awaiting_refill.erase(r.stream) != 0 || no_room) {
        r.refilled = true;  // in full for want of a state
        ++im.evicted[r.stream].refills;
      }
      if (!im.budget) continue;
      if (no_room) im.streams.erase(r.stream);  // the state the forward made is not kept
      im.budget->charge(r.stream, no_room ? 0 : store_bytes(r.stream));
      // What a state saves on this frame: the share the gate would reuse.
      const auto& req = batch[i];
      im.budget->use(r.stream, req.full ? 0.0 : 1.0 - static_cast<double>(req.positions.size()) / n);
    }
    im.peak_bytes = std::max(im.peak_bytes, store_bytes_total());
    return out;
  } catch (const c10::Error& e) {
    // A half-updated store would serve wrong tokens: drop it, the stream's
    // next frame runs in full.
    for (const auto& req : batch) {
      im.streams.erase(req.stream);
      if (im.budget) im.budget->charge(req.stream, 0);
    }
    return error{errc::invalid_argument, std::string("sparse encoder failed: ") + e.what_without_backtrace()};
  }
}

std::uint64_t vision_encoder::state_bytes() const { return impl_->state_bytes(); }

std::uint64_t vision_encoder::store_bytes_peak() const { return impl_->peak_bytes; }

std::uint64_t vision_encoder::store_capacity() const {
  return impl_->budget ? impl_->budget->config().capacity_bytes : 0;
}

std::uint64_t vision_encoder::store_bytes_total() const {
  std::uint64_t total = 0;
  for (const auto& entry : impl_->streams) total += store_bytes(entry.first);
  return total;
}

vision_encoder::eviction_counts vision_encoder::evictions(stream_id stream) const {
  auto it = impl_->evicted.find(stream);
  return it == impl_->evicted.end() ? eviction_counts{} : it->second;
}

bool vision_encoder::has_stream(stream_id stream) const { return impl_->streams.count(stream) != 0; }

std::uint64_t vision_encoder::store_bytes(stream_id stream) const {
  auto it = impl_->streams.find(stream);
  if (it == impl_->streams.end()) return 0;
  const auto& s = it->second;
  std::uint64_t bytes = 0;
  for (const auto* x : {&s.k, &s.v, &s.k_scale, &s.v_scale, &s.out, &s.q, &s.x_in, &s.o_ref, &s.delta, &s.num, &s.z, &s.m})
    bytes += tensor_bytes(*x);
  return bytes;
}

void vision_encoder::rename_stream(stream_id from, stream_id to) {
  auto& im = *impl_;
  if (from == to) return;
  if (im.budget) im.budget->release(to);
  if (im.streams.count(from) == 0) {
    im.streams.erase(to);
    return;
  }
  detail::rename_key(im.streams, from, to);
  im.awaiting_refill.erase(to);  // it holds a state again
  if (im.budget) im.budget->rename(from, to);
}

void vision_encoder::end_stream(stream_id stream) {
  impl_->streams.erase(stream);
  if (impl_->budget) impl_->budget->release(stream);
  impl_->evicted.erase(stream);
  impl_->awaiting_refill.erase(stream);
}

}  // namespace vlcache
