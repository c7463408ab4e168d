#include "core/models/prefill_reuse.hpp"
#include "core/base/elapsed.hpp"

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

/// What one stream's prefill will compute, decided before any model work.
struct prefill_cache::plan {
  stream_id stream = 0;
  stream_state* slot = nullptr;
  std::vector<int> prefix, positions;
  std::vector<std::int64_t> image_rows;  // image-relative rows recomputed
  at::Tensor now;                        // the request's features, f32 CPU
  tensor_handle rows;                    // the embeddings of `positions`
  prefill_result result;
};

prefill_cache::prefill_cache(language_model& model, reuse_options options) : model_(model), options_(options) {}
prefill_cache::~prefill_cache() = default;

expected<prefill_cache::plan> prefill_cache::make_plan(const request& q, bool with_suffix) {
  const auto& prompt = *q.prompt;
  auto embeds = model_.embed(prompt.ids, prompt.image_count > 0 ? q.features : nullptr);
  if (!embeds) {
    streams_.erase(q.stream);
    return embeds.err();
  }
  auto& slot = streams_[q.stream];
  plan p;
  p.stream = q.stream;
  p.prefix.assign(prompt.ids.begin(), prompt.ids.begin() + prompt.image_begin);
  p.now = prompt.image_count > 0 ? q.features->tensor().to(at::kCPU, at::kFloat).contiguous() : at::Tensor();
  const int total = static_cast<int>(prompt.ids.size());
  const bool full = !options_.enabled || !slot || slot->prefix_ids != p.prefix || prompt.image_count == 0 ||
                    !slot->reference.defined() || slot->reference.size(0) != prompt.image_count ||
                    slot->seq.length() < prompt.suffix_begin() ||
                    (options_.full_every > 0 && slot->prefills % static_cast<std::uint64_t>(options_.full_every) == 0);
  if (!slot) slot = std::make_unique<stream_state>();
  p.slot = slot.get();
  const int through = with_suffix ? total : prompt.suffix_begin();  // positions computed in full
  if (full) {
    p.positions.resize(static_cast<std::size_t>(through));
    std::iota(p.positions.begin(), p.positions.end(), 0);
    slot->seq.truncate(0);
    p.image_rows.resize(static_cast<std::size_t>(prompt.image_count));
    std::iota(p.image_rows.begin(), p.image_rows.end(), 0);
  } else {
    const int n = prompt.image_count;
    // Relative L2 distance of every token to its reference.
    auto dist = (p.now - slot->reference).norm(2, {1}) / (slot->reference.norm(2, {1}) + 1e-12);
    const float* d = dist.data_ptr<float>();
    std::vector<bool> chosen(static_cast<std::size_t>(n), false);
    std::vector<int> unchanged;
    for (int i = 0; i < n; ++i) {
      if (d[i] > options_.change_tolerance) chosen[i] = true;
      else if (d[i] > 0) unchanged.push_back(i);
    }
    // The positions recomputed against drift are the answer's to refresh:
    // an update brings the changed tokens only, so an unchanged frame costs nothing.
    const int first = with_suffix ? options_.recompute_first : 0, last = with_suffix ? options_.recompute_last : 0;
    const int deviation = with_suffix ? options_.recompute_deviation : 0;
    for (int i = 0; i < std::min(n, first); ++i) chosen[i] = true;
    for (int i = std::max(0, n - last); i < n; ++i) chosen[i] = true;
    const auto k = std::min<std::size_t>(unchanged.size(), static_cast<std::size_t>(std::max(0, deviation)));
    std::partial_sort(unchanged.begin(), unchanged.begin() + static_cast<std::ptrdiff_t>(k), unchanged.end(),
                      [&](int a, int b) { return d[a] > d[b]; });
    for (std::size_t i = 0; i < k; ++i) chosen[unchanged[i]] = true;
    for (int i = 0; i < n; ++i)
      if (chosen[i]) {
        p.positions.push_back(prompt.image_begin + i);
        p.image_rows.push_back(i);
      }
    for (int i = prompt.suffix_begin(); i < through; ++i) p.positions.push_back(i);
    slot->seq.truncate(prompt.suffix_begin());
  }
  const auto rows = at::tensor(std::vector<std::int64_t>(p.positions.begin(), p.positions.end()), at::kLong)
                        .to(embeds->tensor().device());
  p.rows = tensor_handle(embeds->tensor().index_select(0, rows));
  p.result.full = full;
  p.result.prompt_tokens = through;
  p.result.image_tokens = prompt.image_count;
  p.result.image_recomputed = static_cast<int>(p.image_rows.size());
  p.result.rows_computed = static_cast<int>(p.positions.size());
  return p;
}

void prefill_cache::finish(plan& p, const tensor_handle& logits) {
  auto& slot = *p.slot;
  if (p.result.image_tokens > 0) {
    if (p.result.full) {
      slot.reference = p.now.clone();
    } else if (!p.image_rows.empty()) {
      auto idx = at::tensor(p.image_rows, at::kLong);
      slot.reference.index_copy_(0, idx, p.now.index_select(0, idx));
    }
  }
  slot.prefix_ids = p.prefix;
  if (!p.positions.empty()) ++slot.prefills;  // an unchanged frame's update did nothing
  p.result.logits = logits;
}

expected<prefill_result> prefill_cache::prefill(stream_id stream, const prompt_layout& prompt,
                                                const tensor_handle& features) {
  auto out = prefill_batch({request{stream, &prompt, &features}});
  return std::move(out[0]);
}

std::vector<expected<prefill_result>> prefill_cache::prefill_batch(const std::vector<request>& batch) {
  return run_batch(batch, true);
}

std::vector<expected<prefill_result>> prefill_cache::update_batch(const std::vector<request>& batch) {
  return run_batch(batch, false);
}

std::vector<expected<prefill_result>> prefill_cache::run_batch(const std::vector<request>& batch, bool with_suffix) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<expected<prefill_result>> out;
  std::vector<plan> plans;
  std::vector<std::size_t> slot_of;  // plans[i] answers batch[slot_of[i]]
  for (std::size_t i = 0; i < batch.size(); ++i) {
    bool twice = false;
    for (std::size_t j = 0; j < i; ++j) twice |= batch[j].stream == batch[i].stream;
    if (twice) {
      out.emplace_back(error{errc::invalid_argument, "prefill: stream " + std::to_string(batch[i].stream) +
                                                         " appears twice in one batch"});
      continue;
    }
    auto p = make_plan(batch[i], with_suffix);
    if (!p) {
      out.emplace_back(p.err());
      continue;
    }
    out.emplace_back(prefill_result{});
    slot_of.push_back(i);
    plans.push_back(std::move(*p));
  }
  // An update for an unchanged frame computes nothing: only the others run.
  std::vector<std::size_t> work;
  std::vector<kv_sequence*> seqs;
  std::vector<tensor_handle> rows;
  std::vector<std::vector<int>> positions;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    auto& p = plans[i];
    if (p.positions.empty()) continue;
    work.push_back(i);
    seqs.push_back(&p.slot->seq);
    rows.push_back(p.rows);
    positions.push_back(p.positions);
  }
  expected<std::vector<tensor_handle>> logits = std::vector<tensor_handle>{};
  if (!work.empty()) logits = model_.forward_batch(seqs, rows, positions);
  const double ms = ms_since(start);
  std::vector<tensor_handle> by_plan(plans.size());
  if (logits)
    for (std::size_t j = 0; j < work.size(); ++j) by_plan[work[j]] = (*logits)[j];
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!logits && !plans[i].positions.empty()) {
      streams_.erase(plans[i].stream);  // its KV may be half written
      out[slot_of[i]] = logits.err();
      continue;
    }
    finish(plans[i], with_suffix ? by_plan[i] : tensor_handle{});
    plans[i].result.ms = ms;
    out[slot_of[i]] = std::move(plans[i].result);
  }
  return out;
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
