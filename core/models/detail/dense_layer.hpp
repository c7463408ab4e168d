#pragma once
/// \file
/// A linear layer for the model .cpp files (includes ATen; never include it
/// from a public header).

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "core/kernels/small_gemm.hpp"

namespace vlcache::detail {

/// A linear layer y = x W^T + b. On the CPU in f32 it runs the packed
/// small-row kernel (faster than BLAS at every row count measured, see
/// bench/small_gemm_bench); elsewhere at::linear.
struct dense {
  at::Tensor w, b;
  packed_weight packed;

  /// `half`: the packed panels hold half-precision weights (core/kernels/small_gemm).
  void prepare(bool aten_only, bool half = false) {
    if (!aten_only && w.device().is_cpu() && w.scalar_type() == at::kFloat) {
      auto wc = w.contiguous();
      auto bc = b.defined() ? b.contiguous() : at::Tensor();
      packed = packed_weight(wc.data_ptr<float>(), static_cast<int>(wc.size(0)), static_cast<int>(wc.size(1)),
                             bc.defined() ? bc.data_ptr<float>() : nullptr, half);
      w = at::Tensor();  // the packed copy is the only one used from here on
      b = at::Tensor();
    }
  }
  at::Tensor operator()(const at::Tensor& x) const {
    if (packed.empty()) return at::linear(x, w, b);
    auto sizes = x.sizes().vec();
    auto x2 = x.reshape({-1, sizes.back()}).contiguous();
    const int m = static_cast<int>(x2.size(0));
    auto y = at::empty({x2.size(0), static_cast<std::int64_t>(packed.n())}, x2.options());
    const float* xp = x2.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, packed.panels(), 1, [&](std::int64_t p0, std::int64_t p1) {
      packed.apply(xp, m, yp, static_cast<int>(p0), static_cast<int>(p1));
    });
    sizes.back() = packed.n();
    return y.view(sizes);
  }
};

}  // namespace vlcache::detail
