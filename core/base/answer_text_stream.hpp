#pragma once
/// \file
/// An answer's text as it grows token by token, cut into pieces that are
/// final: a piece is handed out only once no stop string can still begin
/// inside it, and never ends inside a UTF-8 character. Stop strings end the
/// answer where they begin and are not part of it (OpenAI's `stop`).
/// Pure bookkeeping over the decoded text; the caller decodes.

#include <string>
#include <vector>

namespace vlcache {

class answer_text_stream {
 public:
  explicit answer_text_stream(std::vector<std::string> stops = {});

  /// `text` is the whole answer decoded so far. Returns what became final
  /// since the last call (often empty). Once a stop string is found the
  /// text is cut before it and stopped() is true; later calls return "".
  [[nodiscard]] std::string update(const std::string& text);
  /// The answer ended: whatever was held back becomes final.
  [[nodiscard]] std::string finish();

  [[nodiscard]] bool stopped() const noexcept { return stopped_; }
  /// The answer's text: cut before the stop string when one was found.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  std::vector<std::string> stops_;
  std::string text_;
  std::size_t handed_ = 0;  // bytes of text_ already handed out
  bool stopped_ = false;
};

}  // namespace vlcache
