#pragma once
/// \file
/// What the libraries under vlcache print on their own (OpenCV's and
/// FFmpeg's warnings): nothing unless asked for (`--verbose`); vlcache
/// reports each failure itself, in one line that names the camera.

namespace vlcache::connectors {

void set_library_logs(bool verbose);

}  // namespace vlcache::connectors
