#include "core/shadow_check.hpp"

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
                               std::int64_t dim, std::vector<float>* each) {
  token_agreement out;
  if (each != nullptr) each->clear();
  if (tokens <= 0) return out;
  double sum = 0, worst = 1.0;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double cos = token_cosine(cached + t * dim, full + t * dim, dim);
    sum += cos;
    worst = std::min(worst, cos);
    if (each != nullptr) each->push_back(static_cast<float>(cos));
  }
  out.cosine_mean = sum / static_cast<double>(tokens);
  out.cosine_min = worst;
  return out;
}

}  // namespace vlcache
