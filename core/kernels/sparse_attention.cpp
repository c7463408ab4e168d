#include "core/kernels/sparse_attention.hpp"

#include "core/base/simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace vlcache {
namespace {

using simd::load8;
using simd::store8;
using simd::v8f;

#ifdef __F16C__
v8f load8h(const std::uint16_t* p) {
  const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  v8f v;
  std::memcpy(&v, &x, sizeof v);
  return v;
}
#else
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      std::uint32_t m = man;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
v8f load8h(const std::uint16_t* p) {
  float t[8];
  for (int i = 0; i < 8; ++i) t[i] = half_to_float(p[i]);
  return load8(t);
}
#endif

}  // namespace

void to_half(const float* in, std::uint16_t* out, std::int64_t n) {
#ifdef __F16C__
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = static_cast<std::uint16_t>(_cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT));
#else
  for (std::int64_t i = 0; i < n; ++i) {  // round to nearest even, no F16C
    std::uint32_t x;
    std::memcpy(&x, in + i, sizeof x);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
    std::uint32_t man = x & 0x7fffffu;
    std::uint16_t h;
    if (((x >> 23) & 0xff) == 0xff) h = static_cast<std::uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
    else if (exp >= 31) h = static_cast<std::uint16_t>(sign | 0x7c00u);
    else if (exp <= 0) {
      if (exp < -10) h = static_cast<std::uint16_t>(sign);
      else {
        man |= 0x800000u;
        const int shift = 14 - exp;
        std::uint32_t r = man >> shift;
        const std::uint32_t rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (r & 1))) ++r;
        h = static_cast<std::uint16_t>(sign | r);
      }
    } else {
      std::uint32_t r = (static_cast<std::uint32_t>(exp) << 10) | (man >> 13);
      const std::uint32_t rest = man & 0x1fffu;
      if (rest > 0x1000u || (rest == 0x1000u && (r & 1))) ++r;
      h = static_cast<std::uint16_t>(sign | r);
    }
    out[i] = h;
  }
#endif
}

void from_half(const std::uint16_t* in, float* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(out + i, load8h(in + i));
  for (; i < n; ++i) {
    std::uint16_t t[8] = {in[i]};
    float f[8];
    store8(f, load8h(t));
    out[i] = f[0];
  }
}

void quantize_row(const float* in, int heads, int head_dim, std::int8_t* out, float* scales) {
  for (int h = 0; h < heads; ++h) {
    const float* x = in + static_cast<std::int64_t>(h) * head_dim;
    std::int8_t* q = out + static_cast<std::int64_t>(h) * head_dim;
    float top = 0;
#pragma omp simd reduction(max : top)
    for (int d = 0; d < head_dim; ++d) top = std::max(top, std::fabs(x[d]));
    const float inv = top > 0 ? 127.0f / top : 0.0f;
    // Half away from zero by truncation: vectorizes, where lrint is a call
    // per element (this runs for every recomputed token, layer and head).
#pragma omp simd
    for (int d = 0; d < head_dim; ++d) {
      const float y = x[d] * inv;
      q[d] = static_cast<std::int8_t>(static_cast<int>(y + (y >= 0 ? 0.5f : -0.5f)));
    }
    scales[h] = top / 127.0f;
  }
}

void store_keys(const attention_frame& f, const attention_shape& s, const float* keys,
                const std::int64_t* tokens, int count) {
  for (int head = 0; head < s.heads; ++head) store_keys(f, s, keys, tokens, count, head);
}

void store_keys(const attention_frame& f, const attention_shape& s, const float* keys,
                const std::int64_t* tokens, int count, int head) {
  const int w = s.width(), dh = s.head_dim, c0 = head * dh;
  if (f.k_t8 != nullptr) {
    thread_local std::vector<std::int8_t> row;  // one token's head, before it is spread over the transposed rows
    row.resize(static_cast<std::size_t>(dh));
    for (int j = 0; j < count; ++j) {
      quantize_row(keys + static_cast<std::int64_t>(j) * w + c0, 1, dh, row.data(),
                   f.k_scale + static_cast<std::int64_t>(head) * s.tokens + tokens[j]);
      for (int e = 0; e < dh; ++e) f.k_t8[static_cast<std::int64_t>(c0 + e) * s.tokens + tokens[j]] = row[static_cast<std::size_t>(e)];
    }
    return;
  }
  if (f.k_t16 != nullptr) {
    std::uint16_t chunk[8];  // converted eight at a time: no allocation per (frame, head) item
    for (int j = 0; j < count; ++j)
      for (int e0 = 0; e0 < dh; e0 += 8) {
        const int len = std::min(8, dh - e0);
        to_half(keys + static_cast<std::int64_t>(j) * w + c0 + e0, chunk, len);
        for (int e = 0; e < len; ++e)
          f.k_t16[static_cast<std::int64_t>(c0 + e0 + e) * s.tokens + tokens[j]] = chunk[e];
      }
    return;
  }
  for (int j = 0; j < count; ++j)
    for (int c = c0; c < c0 + dh; ++c)  // c = head * head_dim + d: row c of the transposed keys
      f.k_t[static_cast<std::int64_t>(c) * s.tokens + tokens[j]] = keys[static_cast<std::int64_t>(j) * w + c];
}

void store_values_i8(const attention_frame& f, const attention_shape& s, const float* values,
                     const std::int64_t* tokens, int count, int head) {
  const int w = s.width(), dh = s.head_dim;
  for (int j = 0; j < count; ++j)
    quantize_row(values + static_cast<std::int64_t>(j) * w + head * dh, 1, dh, f.v8 + tokens[j] * w + head * dh,
                 f.v_scale + tokens[j] * s.heads + head);
}

namespace {

#if defined(__AVX512F__)
using key_vec = simd::v16f;
#else
using key_vec = simd::v8f;
#endif
constexpr int key_lanes = simd::lanes<key_vec>;

/// key_lanes keys from an f32 or a half-precision store (widened in
/// registers: the arithmetic stays f32).
key_vec load_keys(const float* p) { return simd::load<key_vec>(p); }
key_vec load_keys(const std::uint16_t* p) {
#if defined(__AVX512F__)
  // Two halves joined in registers (GCC 12's 16-wide conversion intrinsic
  // warns spuriously).
  return __builtin_shufflevector(load8h(p), load8h(p + 8), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  return load8h(p);
#endif
}
/// From an 8-bit store: the int8 values widened, before their scale.
key_vec load_keys(const std::int8_t* p) {
  key_vec v;
#if defined(__AVX512F__)
  const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  std::memcpy(&v, &x, sizeof v);
#elif defined(__AVX2__)
  const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  std::memcpy(&v, &x, sizeof v);
#else
  float t[key_lanes];
  for (int i = 0; i < key_lanes; ++i) t[i] = p[i];
  std::memcpy(&v, t, sizeof v);
#endif
  return v;
}

/// Scores of QB queries against KB x key_lanes keys, summed over the head's
/// dimensions in registers (no row is loaded and stored per dimension): a
/// small GEMM tile, the keys' vectors loaded once for all QB queries.
template <int QB, int KB, typename T>
void scores_tile(const float* const* q, const T* kt, int dh, int n, int t0, float* const* rows) {
  key_vec acc[QB][KB] = {};
  for (int d = 0; d < dh; ++d) {
    const T* k = kt + static_cast<std::int64_t>(d) * n + t0;
    key_vec kv[KB];
    for (int b = 0; b < KB; ++b) kv[b] = load_keys(k + b * key_lanes);
#pragma GCC unroll 4
    for (int i = 0; i < QB; ++i) {
      const float qd = q[i][d];
      for (int b = 0; b < KB; ++b) acc[i][b] += qd * kv[b];
    }
  }
  for (int i = 0; i < QB; ++i)
    for (int b = 0; b < KB; ++b) simd::store(rows[i] + t0 + b * key_lanes, acc[i][b]);
}

/// scores_tile for a run-time tile height qb <= QB.
template <int KB, int QB, typename T>
void scores_tile_n(int qb, const float* const* q, const T* kt, int dh, int n, int t0, float* const* rows) {
  if constexpr (QB == 1) {
    scores_tile<1, KB>(q, kt, dh, n, t0, rows);
  } else {
    if (qb == QB) return scores_tile<QB, KB>(q, kt, dh, n, t0, rows);
    scores_tile_n<KB, QB - 1>(qb, q, kt, dh, n, t0, rows);
  }
}

/// Keys stored as T (f32 or half): tiles of up to 4 queries x 2 key vectors
/// (measured against 6 and 8 queries a tile, which ran slower); the keys
/// past the last whole vector through the same tile from a zero-padded copy
/// (a scalar chain per score took a fifth of this function's time at 197
/// tokens).
template <typename T>
void scores_head(const attention_frame& f, const attention_shape& s, int head, float* base, const T* k_t) {
  constexpr int QB = 4;
  const int w = s.width(), dh = s.head_dim, n = s.tokens;
  const T* kt = k_t + static_cast<std::int64_t>(head) * dh * n;
  const int whole = n / key_lanes * key_lanes;
  thread_local std::vector<T> tail_keys;  // reused: this runs per (frame, head, layer)
  if (whole < n) {
    tail_keys.assign(static_cast<std::size_t>(dh) * key_lanes, T{0});
    for (int d = 0; d < dh; ++d)
      std::memcpy(tail_keys.data() + static_cast<std::size_t>(d) * key_lanes, kt + static_cast<std::int64_t>(d) * n + whole,
                  sizeof(T) * static_cast<std::size_t>(n - whole));
  }
  for (int i0 = 0; i0 < f.m; i0 += QB) {
    const int qb = std::min(QB, f.m - i0);
    const float* q[QB];
    float* rows[QB];
    for (int i = 0; i < qb; ++i) {
      q[i] = f.q + static_cast<std::int64_t>(i0 + i) * w + head * dh;
      rows[i] = base + static_cast<std::int64_t>(i0 + i) * n;
    }
    int t0 = 0;
    for (; t0 + 2 * key_lanes <= whole; t0 += 2 * key_lanes) scores_tile_n<2, QB>(qb, q, kt, dh, n, t0, rows);
    for (; t0 < whole; t0 += key_lanes) scores_tile_n<1, QB>(qb, q, kt, dh, n, t0, rows);
    if (whole == n) continue;
    float tail_out[QB][key_lanes];
    float* tail_rows[QB];
    for (int i = 0; i < QB; ++i) tail_rows[i] = tail_out[i];
    scores_tile_n<1, QB>(qb, q, tail_keys.data(), dh, key_lanes, 0, tail_rows);
    for (int i = 0; i < qb; ++i)
      std::memcpy(rows[i] + whole, tail_out[i], sizeof(float) * static_cast<std::size_t>(n - whole));
  }
}

void prefetch_range(const void* p, std::int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (std::int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 0, 2);
}

}  // namespace

void attention_prefetch(const attention_frame& f, const attention_shape& s, int head) {
  const std::int64_t n = s.tokens, dh = s.head_dim, w = s.width();
  const std::int64_t el = f.k_t8 != nullptr ? 1 : f.k_t16 != nullptr ? 2 : 4;
  const char* k = f.k_t8 != nullptr    ? reinterpret_cast<const char*>(f.k_t8)
                  : f.k_t16 != nullptr ? reinterpret_cast<const char*>(f.k_t16)
                                       : reinterpret_cast<const char*>(f.k_t);
  if (k != nullptr) prefetch_range(k + head * dh * n * el, dh * n * el);
  const char* v = f.v8 != nullptr    ? reinterpret_cast<const char*>(f.v8)
                  : f.v16 != nullptr ? reinterpret_cast<const char*>(f.v16)
                                     : reinterpret_cast<const char*>(f.v);
  if (v != nullptr)
    for (std::int64_t t = 0; t < n; ++t) prefetch_range(v + (t * w + head * dh) * el, dh * el);
}

void attention_scores(const attention_frame& f, const attention_shape& s, int head, float* scores) {
  float* base = scores + f.score_offset + static_cast<std::int64_t>(head) * f.m * s.tokens;
  if (f.k_t8 != nullptr) {
    scores_head(f, s, head, base, f.k_t8);
    // Each key's scale, applied to its column once the dimensions are summed.
    const float* scale = f.k_scale + static_cast<std::int64_t>(head) * s.tokens;
    for (int i = 0; i < f.m; ++i) {
      float* row = base + static_cast<std::int64_t>(i) * s.tokens;
#pragma omp simd
      for (int t = 0; t < s.tokens; ++t) row[t] *= scale[t];
    }
  } else if (f.k_t16 != nullptr) {
    scores_head(f, s, head, base, f.k_t16);
  } else {
    scores_head(f, s, head, base, f.k_t);
  }
}

void attention_softmax(const attention_frame& f, const attention_shape& s, int head, float* scores,
                       float* row_max, float* row_sum) {
  const int n = s.tokens;
  float* base = scores + f.score_offset + static_cast<std::int64_t>(head) * f.m * n;
  for (int i = 0; i < f.m; ++i) {
    float* row = base + static_cast<std::int64_t>(i) * n;
    const float m = simd::max_of(row, n);
    const float z = simd::exp_sum(row, m, n, row);
    const float inv = 1.0f / z;
    for (int j = 0; j < n; ++j) row[j] *= inv;
    if (row_max != nullptr) row_max[i] = m;
    if (row_sum != nullptr) row_sum[i] = z;
  }
}

namespace {

/// QB queries' weighted sums at once over values stored as T (f32 or half),
/// VECS key_vec-wide pieces of the head each: a value row is loaded (and
/// widened) once for all QB queries.
template <int QB, int VECS, typename T>
void weighted_sum_tile(const float* const* p, const T* v, int tokens, int width, float* const* out) {
  key_vec acc[QB][VECS] = {};
  for (int t = 0; t < tokens; ++t) {
    const T* vt = v + static_cast<std::int64_t>(t) * width;
    key_vec vv[VECS];
    for (int j = 0; j < VECS; ++j) vv[j] = load_keys(vt + j * key_lanes);
    for (int i = 0; i < QB; ++i) {
      const float pt = p[i][t];
      for (int j = 0; j < VECS; ++j) acc[i][j] += pt * vv[j];
    }
  }
  for (int i = 0; i < QB; ++i)
    for (int j = 0; j < VECS; ++j) simd::store(out[i] + j * key_lanes, acc[i][j]);
}

/// Every query of one head, in tiles of up to four queries (QB x VECS
/// accumulators within half the vector registers).
template <int VECS, typename T>
void apply_head_tiled(const attention_frame& f, const attention_shape& s, int head, const float* base, const T* v) {
  constexpr int QB = std::max(1, std::min(4, 16 / VECS));
  const int w = s.width(), dh = s.head_dim, n = s.tokens;
  for (int i0 = 0; i0 < f.m; i0 += QB) {
    const int qb = std::min(QB, f.m - i0);
    const float* p[QB];
    float* out[QB];
    for (int i = 0; i < qb; ++i) {
      p[i] = base + static_cast<std::int64_t>(i0 + i) * n;
      out[i] = f.out + static_cast<std::int64_t>(i0 + i) * w + head * dh;
    }
    if (qb == QB) weighted_sum_tile<QB, VECS>(p, v, n, w, out);
    else
      for (int i = 0; i < qb; ++i) weighted_sum_tile<1, VECS>(p + i, v, n, w, out + i);
  }
}

float value_at(const float* v, std::int64_t i) { return v[i]; }
float value_at(const std::int8_t* v, std::int64_t i) { return v[i]; }
float value_at(const std::uint16_t* v, std::int64_t i) {
  float x = 0;
  from_half(v + i, &x, 1);
  return x;
}

/// The weighted sums of one head for every query of the frame, values
/// stored as T (f32 or half): tiled for head widths of 1-16 whole vectors,
/// plain loops otherwise.
template <typename T>
void apply_head(const attention_frame& f, const attention_shape& s, int head, const float* base, const T* v) {
  const int w = s.width(), dh = s.head_dim, n = s.tokens;
  switch (dh) {
    case key_lanes: return apply_head_tiled<1>(f, s, head, base, v);
    case 2 * key_lanes: return apply_head_tiled<2>(f, s, head, base, v);
    case 4 * key_lanes: return apply_head_tiled<4>(f, s, head, base, v);
    case 8 * key_lanes: return apply_head_tiled<8>(f, s, head, base, v);
    case 16 * key_lanes: return apply_head_tiled<16>(f, s, head, base, v);
    default: break;
  }
  for (int i = 0; i < f.m; ++i) {
    const float* p = base + static_cast<std::int64_t>(i) * n;
    float* out = f.out + static_cast<std::int64_t>(i) * w + head * dh;
    std::fill(out, out + dh, 0.0f);
    for (int t = 0; t < n; ++t)
      for (int d = 0; d < dh; ++d) out[d] += p[t] * value_at(v, static_cast<std::int64_t>(t) * w + d);
  }
}

}  // namespace

void attention_apply(const attention_frame& f, const attention_shape& s, int head, const float* probs) {
  const float* base = probs + f.score_offset + static_cast<std::int64_t>(head) * f.m * s.tokens;
  if (f.v8 != nullptr) {
    // Each value's scale folded into its weight: the tiles then sum int8 rows.
    thread_local std::vector<float> scaled, column;
    const int n = s.tokens;
    column.resize(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t) column[static_cast<std::size_t>(t)] = f.v_scale[static_cast<std::int64_t>(t) * s.heads + head];
    scaled.resize(static_cast<std::size_t>(f.m) * n);
    for (int i = 0; i < f.m; ++i) {
      const float* p = base + static_cast<std::int64_t>(i) * n;
      float* out = scaled.data() + static_cast<std::size_t>(i) * n;
#pragma omp simd
      for (int t = 0; t < n; ++t) out[t] = p[t] * column[static_cast<std::size_t>(t)];
    }
    return apply_head(f, s, head, scaled.data(), f.v8 + head * s.head_dim);
  }
  if (f.v16 != nullptr) apply_head(f, s, head, base, f.v16 + head * s.head_dim);
  else apply_head(f, s, head, base, f.v + head * s.head_dim);
}

}  // namespace vlcache
