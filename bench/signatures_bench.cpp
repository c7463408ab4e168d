// Microbenchmarks of the per-frame cache decision: signatures of a whole
// frame, the reference gate, and the content-addressed index.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/cache/patch_signatures.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/cache/token_index.hpp"

namespace {

using namespace vlcache;

std::vector<std::uint8_t> noise_image(int size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<std::uint8_t> px(static_cast<std::size_t>(size) * size * 3);
  for (auto& v : px) v = static_cast<std::uint8_t>(d(rng));
  return px;
}

void BM_signatures(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0)), patch = static_cast<int>(state.range(1));
  auto engine = *signature_engine::make(*patch_grid::make(size, patch));
  const auto px = noise_image(size, 1);
  const image_view img{px.data(), size, size, 3, 1, 0, channel_order::rgb};
  frame_signatures sigs;
  for (auto _ : state) {
    auto st = engine.compute(img, sigs);
    benchmark::DoNotOptimize(sigs.ahash.data());
  }
  state.counters["patches"] = engine.grid().count();
}
BENCHMARK(BM_signatures)->Args({336, 14})->Args({224, 16})->Unit(benchmark::kMicrosecond);

void BM_gate_decide_commit(benchmark::State& state) {
  const int size = static_cast<int>(state.range(0)), patch = static_cast<int>(state.range(1));
  const auto grid = *patch_grid::make(size, patch);
  auto engine = *signature_engine::make(grid);
  gate_thresholds t;
  t.ahash = 8;
  t.mad = 6.0f;
  auto gate = *reference_gate::make(grid, t);
  const auto a = noise_image(size, 1), b = noise_image(size, 2);
  auto sa = *engine.compute(image_view{a.data(), size, size, 3, 1, 0, channel_order::rgb});
  auto sb = *engine.compute(image_view{b.data(), size, size, 3, 1, 0, channel_order::rgb});
  auto first = *gate.decide(0, sa);
  (void)gate.commit(0, sa, first.miss_positions, 0);
  std::uint64_t frame = 1;
  for (auto _ : state) {
    // Alternating a frame that matches the references with one that does not.
    const auto& s = (frame & 1) ? sa : sb;
    auto d = *gate.decide(0, s);
    benchmark::DoNotOptimize(d.miss.data());
    ++frame;
  }
}
BENCHMARK(BM_gate_decide_commit)->Args({336, 14})->Args({224, 16})->Unit(benchmark::kMicrosecond);

void BM_index_find_near(benchmark::State& state) {
  const auto grid = *patch_grid::make(336, 14);
  token_index_config c;
  c.capacity_bytes = 256ull << 20;
  auto index = *token_index::make(c);
  std::mt19937_64 rng(3);
  for (int frame = 0; frame < 8; ++frame)
    for (int pos = 0; pos < grid.count(); ++pos)
      (void)index.insert(rng(), 0, pos, frame, std::vector<float>(1024, 0.5f), frame);
  std::uint64_t now = 8;
  for (auto _ : state) {
    // One frame's worth of lookups: 10 % of positions search a 5x5 window.
    for (int pos = 0; pos < grid.count(); pos += 10)
      benchmark::DoNotOptimize(index.find_near(rng(), 0, pos, grid, 2, 6, now));
    ++now;
  }
}
BENCHMARK(BM_index_find_near)->Unit(benchmark::kMicrosecond);

void BM_preprocess_vtest_size(benchmark::State& state) {
  const int w = 768, h = 576;
  std::vector<std::uint8_t> px(static_cast<std::size_t>(w) * h * 3);
  std::mt19937 rng(4);
  for (auto& v : px) v = static_cast<std::uint8_t>(rng());
  const image_view img{px.data(), w, h, 3, 1, 0, channel_order::bgr};
  const auto cfg = preprocess_config::clip(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(preprocess(img, cfg));
}
BENCHMARK(BM_preprocess_vtest_size)->Arg(336)->Arg(224)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
