#include "connectors/frame_decoder.hpp"

#include <opencv2/imgcodecs.hpp>

#include "connectors/jpeg_size.hpp"

namespace vlcache::connectors {

expected<owned_image> decode_frame(const wire_frame& f) {
  owned_image out;
  out.width = static_cast<int>(f.width);
  out.height = static_cast<int>(f.height);
  if (f.encoding == frame_encoding::patches)
    return error{errc::invalid_argument, "frame message: patches of stream '" + f.stream +
                                             "' need the stream's canvas (patch_canvas_set)"};
  if (f.encoding == frame_encoding::raw_bgr) {
    out.bgr = f.payload;
    return out;
  }
  // The JPEG's own frame header first: a small message can claim a huge
  // image, and nothing is decoded (allocated) unless it is what the wire
  // header, already bounded, says.
  const auto declared = read_jpeg_size(f.payload.data(), f.payload.size());
  if (!declared)
    return error{errc::invalid_argument, "frame message: the JPEG payload of stream '" + f.stream +
                                             "' has no JPEG frame header"};
  if (declared->width != out.width || declared->height != out.height)
    return error{errc::invalid_argument, "frame message: JPEG of stream '" + f.stream + "' declares " +
                                             std::to_string(declared->width) + "x" + std::to_string(declared->height) +
                                             ", the header says " + std::to_string(f.width) + "x" +
                                             std::to_string(f.height) + " (not decoded)"};
  cv::Mat m;
  try {
    m = cv::imdecode(cv::Mat(1, static_cast<int>(f.payload.size()), CV_8UC1, const_cast<std::uint8_t*>(f.payload.data())),
                     cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
  }
  if (m.empty()) return error{errc::invalid_argument, "frame message: JPEG payload of stream '" + f.stream + "' does not decode"};
  if (m.cols != out.width || m.rows != out.height)
    return error{errc::invalid_argument, "frame message: JPEG of stream '" + f.stream + "' is " + std::to_string(m.cols) +
                                             "x" + std::to_string(m.rows) + ", the header says " +
                                             std::to_string(f.width) + "x" + std::to_string(f.height)};
  out.bgr.resize(static_cast<std::size_t>(m.cols) * m.rows * 3);
  cv::Mat packed(m.rows, m.cols, CV_8UC3, out.bgr.data());
  m.copyTo(packed);
  return out;
}

expected<std::vector<std::uint8_t>> encode_jpeg(const image_view& bgr, int quality) {
  if (auto st = validate_frame(bgr); !st) return st.err();
  cv::Mat m(bgr.height, bgr.width, CV_8UC3, const_cast<std::uint8_t*>(bgr.data), bgr.stride());
  std::vector<std::uint8_t> out;
  try {
    if (!cv::imencode(".jpg", m, out, {cv::IMWRITE_JPEG_QUALITY, quality}))
      return error{errc::io_error, "JPEG encoding failed"};
  } catch (const cv::Exception& e) {
    return error{errc::io_error, std::string("JPEG encoding failed: ") + e.what()};
  }
  return out;
}

}  // namespace vlcache::connectors
