#include "core/prefill_reuse.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace vlcache {

struct prefill_cache::stream_state {
  kv_sequence seq;
  std::vector<int> prefix_ids;  // ids before the image
  at::Tensor reference;         // [image_tokens, hidden] f32 CPU: features each position was computed with
  std::uint64_t prefills = 0;
};

prefill_cache::prefill_cache(language_model& model, reuse_options options) : model_(model), options_(options) {}
prefill_cache::~prefill_cache() = default;

expected<prefill_result> prefill_cache::prefill(stream_id stream, const prompt_layout& prompt,
                                                const tensor_handle& features) {
  const auto start = std::chrono::steady_clock::now();
  auto embeds = model_.embed(prompt.ids, prompt.image_count > 0 ? &features : nullptr);
  if (!embeds) {
    streams_.erase(stream);
    return embeds.err();
  }
  auto& slot = streams_[stream];
  const std::vector<int> prefix(prompt.ids.begin(), prompt.ids.begin() + prompt.image_begin);
  at::Tensor now = prompt.image_count > 0 ? features.tensor().to(at::kCPU, at::kFloat).contiguous() : at::Tensor();
  const int total = static_cast<int>(prompt.ids.size());
  bool full = !options_.enabled || !slot || slot->prefix_ids != prefix || prompt.image_count == 0 ||
              !slot->reference.defined() || slot->reference.size(0) != prompt.image_count ||
              slot->seq.length() < prompt.suffix_begin() ||
              (options_.full_every > 0 && slot->prefills % static_cast<std::uint64_t>(options_.full_every) == 0);
  if (!slot) slot = std::make_unique<stream_state>();
  prefill_result r;
  r.prompt_tokens = total;
  r.image_tokens = prompt.image_count;
  std::vector<int> positions;
  std::vector<std::int64_t> image_rows;  // image-relative rows recomputed
  if (full) {
    positions.resize(static_cast<std::size_t>(total));
    std::iota(positions.begin(), positions.end(), 0);
    slot->seq.truncate(0);
    image_rows.resize(static_cast<std::size_t>(prompt.image_count));
    std::iota(image_rows.begin(), image_rows.end(), 0);
  } else {
    const int n = prompt.image_count;
    // Relative L2 distance of every token to its reference.
    auto dist = (now - slot->reference).norm(2, {1}) / (slot->reference.norm(2, {1}) + 1e-12);
    const float* d = dist.data_ptr<float>();
    std::vector<bool> chosen(static_cast<std::size_t>(n), false);
    std::vector<int> unchanged;
    for (int i = 0; i < n; ++i) {
      if (d[i] > options_.change_tolerance) chosen[i] = true;
      else if (d[i] > 0) unchanged.push_back(i);
    }
    for (int i = 0; i < std::min(n, options_.recompute_first); ++i) chosen[i] = true;
    const auto k = std::min<std::size_t>(unchanged.size(), static_cast<std::size_t>(std::max(0, options_.recompute_deviation)));
    std::partial_sort(unchanged.begin(), unchanged.begin() + static_cast<std::ptrdiff_t>(k), unchanged.end(),
                      [&](int a, int b) { return d[a] > d[b]; });
    for (std::size_t i = 0; i < k; ++i) chosen[unchanged[i]] = true;
    for (int i = 0; i < n; ++i)
      if (chosen[i]) {
        positions.push_back(prompt.image_begin + i);
        image_rows.push_back(i);
      }
    for (int p = prompt.suffix_begin(); p < total; ++p) positions.push_back(p);
    slot->seq.truncate(prompt.suffix_begin());
  }
  const auto rows = at::tensor(std::vector<std::int64_t>(positions.begin(), positions.end()), at::kLong)
                        .to(embeds->tensor().device());
  auto out = model_.forward(slot->seq, tensor_handle(embeds->tensor().index_select(0, rows)), positions);
  if (!out) {
    streams_.erase(stream);
    return out.err();
  }
  if (prompt.image_count > 0) {
    if (full) {
      slot->reference = now.clone();
    } else if (!image_rows.empty()) {
      auto idx = at::tensor(image_rows, at::kLong);
      slot->reference.index_copy_(0, idx, now.index_select(0, idx));
    }
  }
  slot->prefix_ids = prefix;
  ++slot->prefills;
  r.logits = *out;
  r.full = full;
  r.image_recomputed = static_cast<int>(image_rows.size());
  r.rows_computed = static_cast<int>(positions.size());
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

kv_sequence* prefill_cache::sequence(stream_id stream) {
  auto it = streams_.find(stream);
  return it == streams_.end() ? nullptr : &it->second->seq;
}

void prefill_cache::end_stream(stream_id stream) { streams_.erase(stream); }

std::uint64_t prefill_cache::bytes(stream_id stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return 0;
  const auto& s = *it->second;
  return s.seq.bytes() + (s.reference.defined() ? static_cast<std::uint64_t>(s.reference.numel()) * 4 : 0);
}

}  // namespace vlcache
