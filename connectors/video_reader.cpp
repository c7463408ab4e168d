#include "connectors/video_reader.hpp"

#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace vlcache::connectors {

struct video_reader::impl {
  video_reader_config config;
  cv::VideoCapture capture;
  std::vector<std::string> images;  // an image folder, sorted by name; empty for videos
  cv::Mat frame;
  double fps = 0.0;
  std::uint64_t decoded = 0;   // frames decoded from the source
  std::uint64_t returned = 0;  // frames handed out
  double next_due_ms = 0.0;    // sampling: the next capture time to hand out
};

video_reader::video_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
video_reader::~video_reader() = default;

bool is_network_source(const std::string& source) {
  static const char* const schemes[] = {"rtsp://", "rtsps://", "rtmp://", "http://", "https://",
                                        "udp://",  "tcp://",   "srt://",  "rtp://"};
  for (const char* s : schemes)
    if (source.rfind(s, 0) == 0) return true;
  return false;
}

expected<std::unique_ptr<video_reader>> video_reader::open(const video_reader_config& c) {
  if (c.sample_fps < 0.0 || !std::isfinite(c.sample_fps))
    return error{errc::invalid_config, "sample_fps must be >= 0 for source '" + c.source + "'"};
  auto p = std::make_unique<impl>();
  p->config = c;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(c.source, ec)) {
    static const std::set<std::string> exts{".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp"};
    for (const auto& e : fs::directory_iterator(c.source, ec)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (e.is_regular_file() && exts.count(ext)) p->images.push_back(e.path().string());
    }
    std::sort(p->images.begin(), p->images.end());
    if (p->images.empty()) return error{errc::not_found, "image folder '" + c.source + "' holds no images"};
    p->fps = c.sample_fps > 0 ? c.sample_fps : 1.0;  // a folder has no rate: one image per sampled tick
    return std::unique_ptr<video_reader>(new video_reader(std::move(p)));
  }
  try {
    bool opened = false;
    if (c.timeout_s > 0 && is_network_source(c.source)) {
      const int ms = static_cast<int>(c.timeout_s * 1000);
      opened = p->capture.open(c.source, cv::CAP_FFMPEG,
                               {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, ms, cv::CAP_PROP_READ_TIMEOUT_MSEC, ms});
    } else if (c.source.find('%') != std::string::npos) {
      opened = p->capture.open(c.source, cv::CAP_IMAGES);  // an image sequence, frame_%04d.png
    } else {
      // FFmpeg alone (it comes first for files anyway): a file it cannot read
      // is not then handed to GStreamer and the image reader, whose failures
      // print screens of warnings around the one line that matters.
      opened = p->capture.open(c.source, cv::CAP_FFMPEG);
    }
    if (!opened && !is_network_source(c.source) && c.source.find('%') == std::string::npos &&
        !std::filesystem::exists(c.source, ec))
      return error{errc::not_found, "file " + c.source + " does not exist"};
    if (!opened)
      return error{errc::not_found, is_network_source(c.source)
                                        ? "cannot open video source '" + c.source + "'"
                                        : "cannot read " + c.source + " as a video (FFmpeg cannot open it)"};
  } catch (const cv::Exception& e) {
    return error{errc::io_error, "cannot open video source '" + c.source + "': " + e.what()};
  }
  p->fps = p->capture.get(cv::CAP_PROP_FPS);
  if (!(p->fps > 0.0 && p->fps < 1000.0)) p->fps = 0.0;
  return std::unique_ptr<video_reader>(new video_reader(std::move(p)));
}

expected<video_frame> video_reader::read() {
  impl& s = *impl_;
  if (s.config.max_frames != 0 && s.returned >= s.config.max_frames)
    return error{errc::not_found, "end of '" + s.config.source + "' (max_frames reached)"};
  // Frame counts in containers are unreliable: read until decoding stops.
  for (;;) {
    bool ok = false;
    try {
      if (!s.images.empty()) {
        ok = s.decoded < s.images.size();
        if (ok) {
          s.frame = cv::imread(s.images[s.decoded], cv::IMREAD_COLOR);
          if (s.frame.empty())
            return error{errc::io_error, "cannot decode image '" + s.images[s.decoded++] + "'"};
        }
      } else {
        ok = s.capture.read(s.frame);
      }
    } catch (const cv::Exception& e) {
      return error{errc::io_error, "decoding '" + s.config.source + "' failed: " + e.what()};
    }
    if (!ok || s.frame.empty()) return error{errc::not_found, "end of '" + s.config.source + "'"};
    const std::uint64_t index = s.decoded++;
    if (index < s.config.start_frame) continue;
    // Time by frame index at the nominal rate; container timestamps jitter.
    const double t_ms = s.fps > 0.0 ? 1000.0 * static_cast<double>(index) / s.fps
                                    : s.capture.get(cv::CAP_PROP_POS_MSEC);
    if (s.config.sample_fps > 0.0) {
      if (s.returned > 0 && t_ms + 1e-6 < s.next_due_ms) continue;
      const double period = 1000.0 / s.config.sample_fps;
      s.next_due_ms = (s.returned == 0 ? t_ms : s.next_due_ms) + period;
    }
    video_frame f;
    f.seq = s.returned++;
    f.source_index = index;
    f.capture_ms = t_ms;
    f.view.data = s.frame.data;
    f.view.width = s.frame.cols;
    f.view.height = s.frame.rows;
    f.view.channels = s.frame.channels();
    f.view.bytes_per_channel = static_cast<int>(s.frame.elemSize1());
    f.view.row_stride = s.frame.step[0];
    f.view.order = channel_order::bgr;
    return f;
  }
}

double video_reader::source_fps() const noexcept { return impl_->fps; }
int video_reader::width() const noexcept {
  return impl_->images.empty() ? static_cast<int>(impl_->capture.get(cv::CAP_PROP_FRAME_WIDTH)) : impl_->frame.cols;
}
int video_reader::height() const noexcept {
  return impl_->images.empty() ? static_cast<int>(impl_->capture.get(cv::CAP_PROP_FRAME_HEIGHT)) : impl_->frame.rows;
}

}  // namespace vlcache::connectors
