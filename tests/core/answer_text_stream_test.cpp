// An answer's text handed out as it grows: pieces are final, stop strings
// end the answer and are not part of it, UTF-8 characters are never split.

#include <gtest/gtest.h>

#include "core/base/answer_text_stream.hpp"

namespace vlcache {
namespace {

/// Feeds the text one byte at a time, as a decoder might grow it; returns the pieces.
std::vector<std::string> feed(answer_text_stream& s, const std::string& text) {
  std::vector<std::string> pieces;
  for (std::size_t n = 1; n <= text.size() && !s.stopped(); ++n)
    if (auto p = s.update(text.substr(0, n)); !p.empty()) pieces.push_back(p);
  if (auto p = s.finish(); !p.empty()) pieces.push_back(p);
  return pieces;
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}

TEST(answer_text_stream, without_stops_every_byte_goes_out_as_it_comes) {
  answer_text_stream s;
  const auto pieces = feed(s, "two cars");
  EXPECT_EQ(joined(pieces), "two cars");
  EXPECT_EQ(pieces.size(), 8u);
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.text(), "two cars");
}

TEST(answer_text_stream, a_stop_string_ends_the_answer_before_it) {
  answer_text_stream s({"\n", "END"});
  const auto pieces = feed(s, "red ENDING later");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "red ");
  EXPECT_EQ(joined(pieces), "red ");
}

TEST(answer_text_stream, the_start_of_a_stop_string_is_held_until_it_cannot_be_one) {
  answer_text_stream s({"STOP"});
  EXPECT_EQ(s.update("a ST"), "a ");   // "ST" may begin STOP
  EXPECT_EQ(s.update("a STA"), "STA");  // now it cannot
  EXPECT_EQ(s.update("a STAST"), "");
  EXPECT_EQ(s.update("a STASTOP and more"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.text(), "a STA");
  EXPECT_EQ(s.finish(), "");
}

TEST(answer_text_stream, a_utf8_character_is_never_split) {
  answer_text_stream s;
  const std::string text = "caf\xC3\xA9 \xE2\x82\xAC";  // café €
  const auto pieces = feed(s, text);
  EXPECT_EQ(joined(pieces), text);
  for (const auto& p : pieces) {
    const auto last = static_cast<unsigned char>(p.back());
    EXPECT_FALSE(last >= 0xC0) << "a piece ends with a lead byte";
  }
  EXPECT_EQ(pieces[3], "\xC3\xA9");
}

TEST(answer_text_stream, empty_stop_strings_stop_nothing) {
  answer_text_stream s({""});
  EXPECT_EQ(joined(feed(s, "yes")), "yes");
  EXPECT_FALSE(s.stopped());
}

}  // namespace
}  // namespace vlcache
