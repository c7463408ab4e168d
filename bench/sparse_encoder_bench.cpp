// The sparse encoder's cost for a fixed number of recomputed tokens per
// frame, one stream and several batched, against the full forward.
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>

#include "core/models/vision_encoder.hpp"

namespace {

using namespace vlcache;

vision_encoder& encoder(bool aten_only = false) {
  static auto enc = std::move(vision_encoder::load("vit-b16", {}).value());
  static auto aten = [] {
    encoder_options o;
    o.aten_only = true;
    return std::move(vision_encoder::load("vit-b16", o).value());
  }();
  return aten_only ? *aten : *enc;
}

std::vector<float> frame(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> px(3 * 224 * 224);
  for (auto& v : px) v = d(rng);
  return px;
}

void BM_full(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  std::vector<std::vector<float>> px;
  std::vector<const float*> ptrs;
  for (int s = 0; s < streams; ++s) px.push_back(frame(s));
  for (auto& p : px) ptrs.push_back(p.data());
  for (auto _ : state) benchmark::DoNotOptimize(encoder().encode_full(ptrs));
  state.counters["ms_per_frame"] = benchmark::Counter(streams, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_full)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_sparse(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0)), tokens = static_cast<int>(state.range(1));
  auto& enc = encoder(state.range(2) != 0);
  std::vector<std::vector<float>> px;
  for (int s = 0; s < streams; ++s) px.push_back(frame(100 + s));
  std::vector<frame_request> batch;
  std::mt19937 rng(7);
  for (int s = 0; s < streams; ++s) {
    enc.end_stream(s);
    (void)enc.encode({{static_cast<stream_id>(s), px[s].data(), {}, true}});
    std::vector<int> all(196);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    batch.push_back({static_cast<stream_id>(s), px[s].data(), {all.begin(), all.begin() + tokens}, false});
  }
  for (auto _ : state) benchmark::DoNotOptimize(enc.encode(batch));
  state.counters["ms_per_frame"] = benchmark::Counter(streams, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
// Args: streams, tokens per frame, ATen-only path (as on CUDA) instead of the CPU kernels.
BENCHMARK(BM_sparse)->Args({1, 14, 0})->Args({1, 14, 1})->Args({4, 14, 0})->Args({4, 14, 1})->Args({1, 0, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
