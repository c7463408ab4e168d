#pragma once
/// \file
/// Asking a rendered scene: which of a frame's known questions to ask, and
/// whether an answer is the truth. Shared by `bench answers` and the
/// pipeline's cameras on scene folders, so both score the same way.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/scenes/scene.hpp"

namespace vlcache {

/// One question of each kind the frame answers (kinds in name order), the
/// choice within a kind drawn by a hash of the frame index: a rotation
/// (frame % n) aliased with every-10th answered frames and asked only the
/// first and third of four colours.
[[nodiscard]] std::vector<scene_question> pick_questions(const std::vector<scene_question>& all, std::uint64_t frame);

/// The one question asked of `frame` when only one is: its kind drawn by a
/// hash of the frame index (answered frames are often every n-th, and a
/// rotation would alias with n), the question within the kind likewise.
/// Empty when the frame answers none.
[[nodiscard]] std::optional<scene_question> question_for(const std::vector<scene_question>& all, std::uint64_t frame);

/// Exact match after trimming white space at both ends (the tokenizer's
/// dummy prefix may leave a leading space).
[[nodiscard]] bool answer_matches(std::string_view text, std::string_view truth) noexcept;

}  // namespace vlcache
