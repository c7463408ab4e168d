#include "connectors/line_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace vlcache::connectors {
namespace {

/// "Nice" tick spacing: 1, 2 or 5 times a power of ten, about `n` ticks.
double tick_step(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n, p = std::pow(10.0, std::floor(std::log10(raw))), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/// A tick label with as many decimals as the tick spacing needs.
std::string number(double v, double step) {
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 6), std::fabs(v) < step * 1e-6 ? 0.0 : v);
  return buf;
}

cv::Scalar bgr(const std::array<int, 3>& rgb) { return cv::Scalar(rgb[2], rgb[1], rgb[0]); }

}  // namespace

status write_chart_png(const std::string& path, const chart_spec& c) {
  if (c.panels.empty() || c.width < 300 || c.panel_height < 120)
    return error{errc::invalid_argument, "chart '" + path + "': no panels, or too small"};
  const int top = 60, bottom = 40, left = 90, right = 30;
  const int height = top + static_cast<int>(c.panels.size()) * c.panel_height + bottom;
  cv::Mat img(height, c.width, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto font = cv::FONT_HERSHEY_SIMPLEX;
  // The title shrinks to fit the width rather than run off the image.
  double title_scale = 0.75;
  int base = 0;
  while (title_scale > 0.35 && cv::getTextSize(c.title, font, title_scale, 2, &base).width > c.width - left - 10)
    title_scale -= 0.05;
  cv::putText(img, c.title, cv::Point(left, 32), font, title_scale, cv::Scalar(0, 0, 0), 2, cv::LINE_AA);
  double x0 = 1e300, x1 = -1e300;
  for (const auto& p : c.panels)
    for (const auto& s : p.series)
      for (double x : s.x) x0 = std::min(x0, x), x1 = std::max(x1, x);
  if (x0 > x1) x0 = 0, x1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  const int plot_w = c.width - left - right;
  auto px = [&](double x) { return left + static_cast<int>(std::lround((x - x0) / (x1 - x0) * plot_w)); };
  const double xstep = tick_step(x1 - x0, 10);
  for (std::size_t i = 0; i < c.panels.size(); ++i) {
    const auto& p = c.panels[i];
    // A header strip above each box holds the panel's label and legend.
    const int head = top + static_cast<int>(i) * c.panel_height, py0 = head + 24, py1 = head + c.panel_height - 30;
    double y0 = p.y_from_zero ? 0 : 1e300, y1 = -1e300;
    for (const auto& s : p.series)
      for (double y : s.y)
        if (std::isfinite(y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
    if (y0 > y1) y0 = 0, y1 = 1;
    if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
    const double pad = (y1 - y0) * 0.05;
    if (!p.y_from_zero) y0 -= pad;
    y1 += pad;
    auto py = [&](double y) { return py1 - static_cast<int>(std::lround((y - y0) / (y1 - y0) * (py1 - py0))); };
    // Grid and ticks.
    const double ystep = tick_step(y1 - y0, 5);
    for (double y = std::ceil(y0 / ystep) * ystep; y <= y1 + 1e-12; y += ystep) {
      cv::line(img, cv::Point(left, py(y)), cv::Point(left + plot_w, py(y)), cv::Scalar(225, 225, 225), 1);
      cv::putText(img, number(y, ystep), cv::Point(8, py(y) + 5), font, 0.45, cv::Scalar(60, 60, 60), 1, cv::LINE_AA);
    }
    for (double x = std::ceil(x0 / xstep) * xstep; x <= x1 + 1e-12; x += xstep) {
      cv::line(img, cv::Point(px(x), py0), cv::Point(px(x), py1), cv::Scalar(235, 235, 235), 1);
      cv::putText(img, number(x, xstep), cv::Point(px(x) - 10, py1 + 18), font, 0.45, cv::Scalar(60, 60, 60), 1, cv::LINE_AA);
    }
    cv::rectangle(img, cv::Point(left, py0), cv::Point(left + plot_w, py1), cv::Scalar(0, 0, 0), 1);
    cv::putText(img, p.y_label, cv::Point(left, head + 16), font, 0.55, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
    // Series and legend.
    int legend_x = left + plot_w - 10;
    for (auto it = p.series.rbegin(); it != p.series.rend(); ++it) {
      const auto& s = *it;
      int base = 0;
      const auto size = cv::getTextSize(s.name, font, 0.5, 1, &base);
      legend_x -= size.width + 40;
      cv::line(img, cv::Point(legend_x, head + 11), cv::Point(legend_x + 24, head + 11), bgr(s.rgb), 3);
      cv::putText(img, s.name, cv::Point(legend_x + 30, head + 16), font, 0.5, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
    }
    for (const auto& s : p.series) {
      std::vector<cv::Point> pts;
      for (std::size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k)
        if (std::isfinite(s.y[k])) pts.emplace_back(px(s.x[k]), py(s.y[k]));
      if (pts.size() > 1) cv::polylines(img, pts, false, bgr(s.rgb), 2, cv::LINE_AA);
      if (s.markers || pts.size() == 1)
        for (const auto& q : pts) cv::circle(img, q, 4, bgr(s.rgb), cv::FILLED, cv::LINE_AA);
    }
  }
  cv::putText(img, c.x_label, cv::Point(left + plot_w / 2 - 60, height - 10), font, 0.55, cv::Scalar(0, 0, 0), 1,
              cv::LINE_AA);
  try {
    if (!cv::imwrite(path, img)) return error{errc::io_error, "cannot write chart '" + path + "'"};
  } catch (const cv::Exception& e) {
    return error{errc::io_error, "cannot write chart '" + path + "': " + e.what()};
  }
  return {};
}

}  // namespace vlcache::connectors
