#pragma once
/// \file
/// Rendered scenes with known answers: coloured shapes that enter, move,
/// stop and leave on a seeded schedule, drawn over a real background (the
/// caller supplies its pixels). The instrument that measures whether the
/// cache changes answers: every frame comes with its ground truth and the
/// questions that truth answers (docs/scenes.md).
///
/// A scene is a pure function of its seed: the same seed gives the same
/// schedule, positions and pixels (given the same background).

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace vlcache {

enum class scene_shape : std::uint8_t { circle, square, triangle };
enum class scene_color : std::uint8_t { red, green, blue, yellow };
inline constexpr int scene_shape_count = 3;
inline constexpr int scene_color_count = 4;
[[nodiscard]] const char* to_string(scene_shape s) noexcept;
[[nodiscard]] const char* to_string(scene_color c) noexcept;

struct scene_config {
  std::uint64_t seed = 1;
  int frames = 300;
  int size = 160;          ///< frame side in pixels
  int max_objects = 4;     ///< shapes in the frame at once (so every count is 0..4)
  int min_radius = 14;     ///< half-size in pixels: about two 16-px patches across
  int max_radius = 20;
  double max_speed = 8.0;  ///< pixels per frame (a blur long enough to see at 160 px)
  double idle_share = 0.85; ///< share of its time in view a shape stands still
  [[nodiscard]] status validate() const;
};

/// One shape in one frame.
struct scene_object {
  int id = 0;
  scene_shape shape = scene_shape::circle;
  scene_color color = scene_color::red;
  double x = 0, y = 0;    ///< centre, pixels
  double radius = 10;
  double dx = 0, dy = 0;  ///< motion during this frame's exposure, pixels
  bool inside = false;    ///< wholly inside the frame
  bool partly = false;    ///< partly inside (entering or leaving)
  std::uint64_t entered_at = 0;  ///< first frame it was partly inside
  [[nodiscard]] bool moving() const noexcept { return dx != 0 || dy != 0; }
};

/// A question the frame's truth answers, with its one right answer.
struct scene_question {
  std::string kind;  ///< count_color, count_shape, presence, color_of, position, moving
  std::string question;
  std::string answer;
};

struct scene_frame {
  std::uint64_t index = 0;
  std::vector<scene_object> objects;  ///< partly or wholly inside
  /// Every question this frame answers without ambiguity (none about
  /// counts or places while a shape is only partly in view).
  std::vector<scene_question> questions;
};

class scene {
 public:
  [[nodiscard]] static expected<scene> make(const scene_config& config);

  [[nodiscard]] const scene_config& config() const noexcept { return config_; }
  [[nodiscard]] int frames() const noexcept { return config_.frames; }
  /// The truth of frame `index` (0 <= index < frames()).
  [[nodiscard]] scene_frame truth(int index) const;
  /// Draws the frame's shapes onto `rgb` (size x size x 3, the background),
  /// antialiased, moving ones blurred over their motion in the exposure.
  void draw(int index, std::uint8_t* rgb) const;

 private:
  struct track {
    int id;
    scene_shape shape;
    scene_color color;
    double radius;
    std::vector<double> x, y;  // per frame, for the frames [first, first + x.size())
    int first = 0;
  };
  explicit scene(scene_config c) : config_(c) {}
  [[nodiscard]] std::vector<scene_object> objects(int index) const;

  scene_config config_;
  std::vector<track> tracks_;
};

}  // namespace vlcache
