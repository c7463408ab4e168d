// The packed small-row GEMM against the same product through LibTorch/BLAS.
#include <benchmark/benchmark.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "core/kernels/small_gemm.hpp"

namespace {

void packed(benchmark::State& state, bool half) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)), n = static_cast<int>(state.range(2));
  auto w = at::randn({n, k});
  auto b = at::randn({n});
  auto x = at::randn({m, k});
  vlcache::packed_weight pw(w.data_ptr<float>(), n, k, b.data_ptr<float>(), half);
  auto y = at::empty({m, n});
  for (auto _ : state) {
    at::parallel_for(0, pw.panels(), 1, [&](std::int64_t p0, std::int64_t p1) {
      pw.apply(x.data_ptr<float>(), m, y.data_ptr<float>(), static_cast<int>(p0), static_cast<int>(p1));
    });
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_packed(benchmark::State& state) { packed(state, false); }
/// Half-precision panels: half the weight bytes to stream.
void BM_packed_half(benchmark::State& state) { packed(state, true); }

void BM_blas(benchmark::State& state) {
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)), n = static_cast<int>(state.range(2));
  auto w = at::randn({n, k});
  auto b = at::randn({n});
  auto x = at::randn({m, k});
  for (auto _ : state) benchmark::DoNotOptimize(at::linear(x, w, b));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate);
}

#define SHAPES ->Args({15, 768, 768})->Args({15, 768, 3072})->Args({15, 3072, 768})->Args({15, 768, 2304})->Args({60, 768, 3072})->Args({120, 768, 3072})->Args({197, 768, 3072})->Args({788, 768, 3072})->Args({788, 3072, 768})->Unit(benchmark::kMillisecond)->UseRealTime()->UseRealTime()
BENCHMARK(BM_packed) SHAPES;
BENCHMARK(BM_packed_half) SHAPES;
BENCHMARK(BM_blas) SHAPES;

}  // namespace

BENCHMARK_MAIN();
