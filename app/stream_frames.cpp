#include "app/stream_frames.hpp"
#include "core/base/elapsed.hpp"

#include <algorithm>
#include <chrono>

#include "connectors/video_reader.hpp"
#include "core/base/preprocess.hpp"

namespace vlcache::app {

expected<std::vector<stream_frames>> load_stream_frames(const std::string& video, int streams, int start, int offset,
                                                        int frames, int stride, int image_size, int patch_size,
                                                        bool estimate_noise) {
  auto grid = patch_grid::make(image_size, patch_size);
  if (!grid) return grid.err();
  auto engine = signature_engine::make(*grid, estimate_noise);
  if (!engine) return engine.err();
  const auto pre_cfg = preprocess_config::clip(image_size);
  std::vector<stream_frames> data(static_cast<std::size_t>(streams));
  for (int s = 0; s < streams; ++s) {
    connectors::video_reader_config rc;
    rc.source = video;
    rc.start_frame = static_cast<std::uint64_t>(start + s * offset);
    auto reader = connectors::video_reader::open(rc);
    if (!reader) return reader.err();
    for (int read = 0; static_cast<int>(data[s].pixels.size()) < frames; ++read) {
      auto f = (*reader)->read();
      if (!f) break;
      if (read % stride != 0) continue;
      auto pre = preprocess(f->view, pre_cfg);
      if (!pre) return error{pre.err().code, video + ": " + pre.err().message};
      const auto t0 = std::chrono::steady_clock::now();
      auto sig = engine->compute(pre->rgb_view());
      data[s].sign_ms.push_back(
          ms_since(t0));
      if (!sig) return sig.err();
      data[s].sigs.push_back(std::move(*sig));
      data[s].pixels.push_back(std::move(pre->pixels));
    }
  }
  std::size_t n = data[0].pixels.size();
  for (const auto& d : data) n = std::min(n, d.pixels.size());
  if (n < 2) return error{errc::invalid_argument, "'" + video + "' gave fewer than 2 frames per stream at these offsets"};
  for (auto& d : data) {
    d.pixels.resize(n);
    d.sigs.resize(n);
    d.sign_ms.resize(n);
  }
  return data;
}

}  // namespace vlcache::app
