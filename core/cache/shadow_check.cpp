#include "core/cache/shadow_check.hpp"

#include <algorithm>
#include <cmath>

namespace vlcache {

bool shadow_due(const shadow_config& c, std::uint64_t frame, double shadow_seconds, double encode_seconds) noexcept {
  if (!c.enabled() || frame == 0 || frame % static_cast<std::uint64_t>(c.every) != 0) return false;
  // The first check is always allowed; later ones only within the budget.
  return shadow_seconds <= c.max_share * encode_seconds;
}

double token_cosine(const float* a, const float* b, std::int64_t dim) noexcept {
  double dot = 0, na = 0, nb = 0;
  for (std::int64_t i = 0; i < dim; ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
}

token_agreement compare_tokens(const float* cached, const float* full, std::int64_t tokens,
                               std::int64_t dim) noexcept {
  token_agreement out;
  if (tokens <= 0) return out;
  double sum = 0, worst = 1.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double cos = token_cosine(cached + t * dim, full + t * dim, dim);
    sum += cos;
    worst = std::min(worst, cos);
  }
  out.cosine_mean = sum / static_cast<double>(tokens);
  out.cosine_min = worst;
  return out;
}

token_agreement check_result::agreement() const noexcept {
  token_agreement out;
  if (cosines.empty()) return out;
  double sum = 0, worst = 1.0;
  for (float c : cosines) {
    sum += c;
    worst = std::min(worst, static_cast<double>(c));
  }
  out.cosine_mean = sum / static_cast<double>(cosines.size());
  out.cosine_min = worst;
  return out;
}

check_result measure_check(const float* cached, const float* full, const float* previous, std::int64_t tokens,
                           std::int64_t dim) {
  check_result r;
  r.naive2 = previous != nullptr ? 0.0 : -1.0;
  r.cosines.reserve(static_cast<std::size_t>(std::max<std::int64_t>(tokens, 0)));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* a = cached + t * dim;
    const float* b = full + t * dim;
    r.cosines.push_back(static_cast<float>(token_cosine(a, b, dim)));
    for (std::int64_t i = 0; i < dim; ++i) {
      const double e = double(a[i]) - b[i];
      r.err2 += e * e;
      if (previous != nullptr) {
        const double n = double(previous[t * dim + i]) - b[i];
        r.naive2 += n * n;
      }
    }
  }
  return r;
}

}  // namespace vlcache
