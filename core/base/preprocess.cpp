#include "core/base/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace vlcache {
namespace {

constexpr int precision_bits = 32 - 8 - 2;  // Pillow's 8-bit resampling precision

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

/// Pillow's per-output-pixel taps: first input index, tap count, weights.
struct resample_taps {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;  // out_size * ksize, fixed point
};

resample_taps make_taps(int in_size, int out_size) {
  resample_taps t;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(static_cast<std::size_t>(out_size) * t.ksize, 0);
  std::vector<double> w(t.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double k = ww != 0.0 ? w[x] / ww : w[x];
      t.weights[static_cast<std::size_t>(xx) * t.ksize + x] =
          static_cast<std::int32_t>(k < 0 ? -0.5 + k * (1 << precision_bits)
                                          : 0.5 + k * (1 << precision_bits));
    }
    t.first[xx] = xmin;
    t.count[xx] = xmax;
  }
  return t;
}

std::uint8_t clip8(std::int32_t v) {
  if (v >= (1 << precision_bits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> precision_bits);
}

/// A tightly packed RGB image owned by the preprocessing pass.
struct rgb_buffer {
  int width = 0, height = 0;
  std::vector<std::uint8_t> px;
  std::uint8_t* row(int y) { return px.data() + static_cast<std::size_t>(y) * width * 3; }
  const std::uint8_t* row(int y) const {
    return px.data() + static_cast<std::size_t>(y) * width * 3;
  }
};

/// Copies the frame as RGB, optionally centred on a square of `fill`.
rgb_buffer to_rgb(const image_view& f, bool pad_to_square, std::array<std::uint8_t, 3> fill) {
  rgb_buffer out;
  int ox = 0, oy = 0;
  if (pad_to_square && f.width != f.height) {
    const int side = std::max(f.width, f.height);
    out.width = out.height = side;
    if (f.width > f.height) oy = (f.width - f.height) / 2; else ox = (f.height - f.width) / 2;
  } else {
    out.width = f.width;
    out.height = f.height;
  }
  out.px.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  if (ox != 0 || oy != 0)
    for (std::size_t i = 0; i < out.px.size(); i += 3)
      std::copy(fill.begin(), fill.end(), out.px.begin() + i);
  const bool swap = f.order == channel_order::bgr;
  for (int y = 0; y < f.height; ++y) {
    const std::uint8_t* src = f.row(y);
    std::uint8_t* dst = out.row(y + oy) + ox * 3;
    if (!swap) {
      std::copy(src, src + f.width * 3, dst);
    } else {
      for (int x = 0; x < f.width; ++x) {
        dst[3 * x + 0] = src[3 * x + 2];
        dst[3 * x + 1] = src[3 * x + 1];
        dst[3 * x + 2] = src[3 * x + 0];
      }
    }
  }
  return out;
}

/// Resizes `in` to out_w x out_h as Pillow's BICUBIC does and returns only
/// the window [left, left+crop) x [top, top+crop): each output pixel depends
/// on its own taps alone, so skipping the cropped-away ones changes nothing.
std::vector<std::uint8_t> resize_crop(const rgb_buffer& in, int out_w, int out_h, int left,
                                      int top, int crop) {
  const resample_taps h = make_taps(in.width, out_w);
  const resample_taps v = make_taps(in.height, out_h);
  const int y_first = v.first[top];
  const int y_last = v.first[top + crop - 1] + v.count[top + crop - 1];

  // Horizontal pass over the input rows the vertical pass will read.
  rgb_buffer tmp;
  tmp.width = crop;
  tmp.height = y_last - y_first;
  tmp.px.resize(static_cast<std::size_t>(tmp.width) * tmp.height * 3);
  for (int y = 0; y < tmp.height; ++y) {
    const std::uint8_t* src = in.row(y + y_first);
    std::uint8_t* dst = tmp.row(y);
    for (int xo = 0; xo < crop; ++xo) {
      const int xx = xo + left;
      const std::int32_t* k = &h.weights[static_cast<std::size_t>(xx) * h.ksize];
      const std::uint8_t* s = src + 3 * h.first[xx];
      std::int32_t r = 1 << (precision_bits - 1), g = r, b = r;
      for (int i = 0; i < h.count[xx]; ++i) {
        r += s[3 * i + 0] * k[i];
        g += s[3 * i + 1] * k[i];
        b += s[3 * i + 2] * k[i];
      }
      dst[3 * xo + 0] = clip8(r);
      dst[3 * xo + 1] = clip8(g);
      dst[3 * xo + 2] = clip8(b);
    }
  }

  // Vertical pass.
  std::vector<std::uint8_t> out(static_cast<std::size_t>(crop) * crop * 3);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(crop) * 3);
  for (int yo = 0; yo < crop; ++yo) {
    const int yy = yo + top;
    const std::int32_t* k = &v.weights[static_cast<std::size_t>(yy) * v.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (precision_bits - 1));
    for (int i = 0; i < v.count[yy]; ++i) {
      const std::uint8_t* s = tmp.row(v.first[yy] - y_first + i);
      const std::int32_t w = k[i];
      for (std::size_t c = 0; c < acc.size(); ++c) acc[c] += s[c] * w;
    }
    std::uint8_t* dst = out.data() + static_cast<std::size_t>(yo) * crop * 3;
    for (std::size_t c = 0; c < acc.size(); ++c) dst[c] = clip8(acc[c]);
  }
  return out;
}

}  // namespace

preprocess_config preprocess_config::clip(int image_size, bool pad_to_square) {
  preprocess_config c;
  c.image_size = image_size;
  c.shortest_edge = image_size;
  c.pad_to_square = pad_to_square;
  return c;
}

status preprocess_config::validate() const {
  if (image_size < 1 || image_size > 4096)
    return error{errc::invalid_config,
                 "image_size " + std::to_string(image_size) + " is outside [1, 4096]"};
  if (shortest_edge < image_size || shortest_edge > 8192)
    return error{errc::invalid_config, "shortest_edge " + std::to_string(shortest_edge) +
                                           " must be in [image_size, 8192]"};
  for (int c = 0; c < 3; ++c)
    if (!(std[c] > 0.0f))
      return error{errc::invalid_config, "std[" + std::to_string(c) + "] must be positive"};
  return {};
}

expected<preprocessed_image> preprocess(const image_view& frame, const preprocess_config& cfg) {
  if (auto st = validate_frame(frame); !st) return st.err();
  if (auto st = cfg.validate(); !st) return st.err();

  // LLaVA fills with the mean colour as integers: int(m * 255).
  std::array<std::uint8_t, 3> fill{};
  for (int c = 0; c < 3; ++c) fill[c] = static_cast<std::uint8_t>(cfg.mean[c] * 255.0f);
  const rgb_buffer rgb = to_rgb(frame, cfg.pad_to_square, fill);

  // HF get_resize_output_image_size(default_to_square=False): the short side
  // becomes shortest_edge, the long side int(shortest_edge * long / short).
  int out_w, out_h;
  if (rgb.width <= rgb.height) {
    out_w = cfg.shortest_edge;
    out_h = static_cast<int>(static_cast<double>(cfg.shortest_edge) * rgb.height / rgb.width);
  } else {
    out_h = cfg.shortest_edge;
    out_w = static_cast<int>(static_cast<double>(cfg.shortest_edge) * rgb.width / rgb.height);
  }
  const int s = cfg.image_size;
  const int top = (out_h - s) / 2;
  const int left = (out_w - s) / 2;

  preprocessed_image out;
  out.size = s;
  out.rgb = resize_crop(rgb, out_w, out_h, left, top, s);

  // HF rescales in float64, casts to float32, then normalises in float32.
  out.pixels.resize(static_cast<std::size_t>(3) * s * s);
  const std::size_t plane = static_cast<std::size_t>(s) * s;
  for (int c = 0; c < 3; ++c) {
    float lut[256];
    for (int v = 0; v < 256; ++v) {
      const float scaled = static_cast<float>(v * (1.0 / 255.0));
      lut[v] = (scaled - cfg.mean[c]) / cfg.std[c];
    }
    float* dst = out.pixels.data() + c * plane;
    for (std::size_t i = 0; i < plane; ++i) dst[i] = lut[out.rgb[3 * i + c]];
  }
  return out;
}

}  // namespace vlcache
