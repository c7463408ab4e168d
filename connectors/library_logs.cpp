#include "connectors/library_logs.hpp"

#include <cstdlib>

#include <opencv2/core/utils/logger.hpp>

namespace vlcache::connectors {

void set_library_logs(bool verbose) {
  namespace logging = cv::utils::logging;
  logging::setLogLevel(verbose ? logging::LOG_LEVEL_INFO : logging::LOG_LEVEL_SILENT);
  // Read by OpenCV's FFmpeg backend when it opens a capture: its own log.
  if (verbose) setenv("OPENCV_FFMPEG_DEBUG", "1", 1);
}

}  // namespace vlcache::connectors
