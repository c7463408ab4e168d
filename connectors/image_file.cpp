#include "connectors/image_file.hpp"

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace vlcache::connectors {

expected<owned_image> read_image(const std::string& path) {
  if (!std::filesystem::exists(path))
    return error{errc::not_found, "image file '" + path + "' does not exist"};
  cv::Mat m;
  try {
    m = cv::imread(path, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    return error{errc::io_error, "cannot decode image file '" + path + "': " + e.what()};
  }
  if (m.empty()) return error{errc::io_error, "cannot decode image file '" + path + "'"};
  owned_image out;
  out.width = m.cols;
  out.height = m.rows;
  out.bgr.resize(static_cast<std::size_t>(m.cols) * m.rows * 3);
  cv::Mat packed(m.rows, m.cols, CV_8UC3, out.bgr.data());
  m.copyTo(packed);
  return out;
}

}  // namespace vlcache::connectors
