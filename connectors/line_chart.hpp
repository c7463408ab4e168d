#pragma once
/// \file
/// Benchmark figures as PNG files: stacked panels of line series over a
/// shared x axis, with axes, ticks, labels and a legend, drawn with OpenCV.
/// (OpenCV's contrib plot module draws one unlabelled series per image, so
/// the panels are drawn here with its primitives.)

#include <array>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache::connectors {

struct chart_series {
  std::string name;
  std::array<int, 3> rgb{200, 60, 60};
  std::vector<double> x, y;
  bool markers = false;  ///< draw a dot at every point (sparse data such as a sweep)
};

struct chart_panel {
  std::string y_label;
  std::vector<chart_series> series;
  bool y_from_zero = true;  ///< else the range fits the data
};

struct chart_spec {
  std::string title;
  std::string x_label;
  int width = 1200;
  int panel_height = 280;
  std::vector<chart_panel> panels;
};

/// Writes the figure; the error names the file. The image is `width` wide and
/// 60 + panels * panel_height + 40 high.
[[nodiscard]] status write_chart_png(const std::string& path, const chart_spec& chart);

}  // namespace vlcache::connectors
