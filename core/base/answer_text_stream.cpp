#include "core/base/answer_text_stream.hpp"

#include <algorithm>

namespace vlcache {
namespace {

/// Bytes at the end of `s` that begin a UTF-8 character not yet complete.
std::size_t incomplete_utf8_tail(const std::string& s) {
  const std::size_t n = s.size();
  for (std::size_t back = 1; back <= std::min<std::size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

answer_text_stream::answer_text_stream(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string answer_text_stream::update(const std::string& text) {
  if (stopped_) return {};
  // A decoder may re-spell the text's start as it grows; what was handed
  // out stays handed out, and the text goes on from there.
  text_ = text;
  std::size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, text_.find(s, handed_ > s.size() ? handed_ - s.size() : 0));
  if (cut != std::string::npos) {
    text_.resize(std::max(cut, handed_));
    stopped_ = true;
    return finish();
  }
  // Hold back the longest tail that is the start of a stop string.
  std::size_t held = 0;
  for (const auto& s : stops_)
    for (std::size_t k = std::min(s.size() - 1, text_.size()); k > held; --k)
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        held = k;
        break;
      }
  std::size_t ready = text_.size() - held;
  ready -= incomplete_utf8_tail(text_.substr(0, ready));
  if (ready <= handed_) return {};
  std::string piece = text_.substr(handed_, ready - handed_);
  handed_ = ready;
  return piece;
}

std::string answer_text_stream::finish() {
  if (handed_ >= text_.size()) return {};
  std::string piece = text_.substr(handed_);
  handed_ = text_.size();
  return piece;
}

}  // namespace vlcache
