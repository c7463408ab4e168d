#include "connectors/image_file.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace vlcache::connectors {

std::optional<owned_image> decode_image(const std::string& bytes) {
  cv::Mat m;
  try {
    m = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data())),
                     cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    return std::nullopt;
  }
  if (m.empty()) return std::nullopt;
  owned_image out;
  out.width = m.cols;
  out.height = m.rows;
  out.bgr.resize(static_cast<std::size_t>(m.cols) * m.rows * 3);
  cv::Mat packed(m.rows, m.cols, CV_8UC3, out.bgr.data());
  m.copyTo(packed);
  return out;
}

expected<owned_image> read_image(const std::string& path) {
  if (!std::filesystem::exists(path))
    return error{errc::not_found, "image file '" + path + "' does not exist"};
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f && !f.eof()) return error{errc::io_error, "cannot read image file '" + path + "'"};
  auto image = decode_image(bytes);
  if (!image) return error{errc::io_error, "cannot decode image file '" + path + "'"};
  return std::move(*image);
}

}  // namespace vlcache::connectors
