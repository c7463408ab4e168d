#include "core/scenes/scene_questions.hpp"

#include <map>
#include <string>

namespace vlcache {
namespace {

std::map<std::string, std::vector<const scene_question*>> by_kind(const std::vector<scene_question>& all) {
  std::map<std::string, std::vector<const scene_question*>> out;
  for (const auto& q : all) out[q.kind].push_back(&q);
  return out;
}

std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string_view trim(std::string_view s) noexcept {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<scene_question> pick_questions(const std::vector<scene_question>& all, std::uint64_t frame) {
  std::vector<scene_question> out;
  std::uint64_t salt = 0;  // each kind its own draw, so the kinds' choices are not in step
  for (const auto& [kind, qs] : by_kind(all)) out.push_back(*qs[mix(mix(frame) + ++salt) % qs.size()]);
  return out;
}

std::optional<scene_question> question_for(const std::vector<scene_question>& all, std::uint64_t frame) {
  const auto kinds = by_kind(all);
  if (kinds.empty()) return std::nullopt;
  const auto h = mix(frame);
  auto it = kinds.begin();
  std::advance(it, static_cast<long>(h % kinds.size()));
  const auto& qs = it->second;
  return *qs[mix(h) % qs.size()];
}

bool answer_matches(std::string_view text, std::string_view truth) noexcept { return trim(text) == trim(truth); }

}  // namespace vlcache
