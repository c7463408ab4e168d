#include "core/scenes/scene.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

namespace vlcache {
namespace {

/// Uniform doubles from the standard's fully specified engine (the standard
/// distributions differ between library implementations; seeds must not).
class rng {
 public:
  explicit rng(std::uint64_t seed) : e_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(e_() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(e_() % static_cast<std::uint64_t>(n)); }
  bool chance(double p) { return uniform(0, 1) < p; }

 private:
  std::mt19937_64 e_;
};

constexpr std::array<std::array<std::uint8_t, 3>, scene_color_count> palette{{
    {{222, 38, 38}},    // red
    {{36, 178, 62}},    // green
    {{40, 84, 226}},    // blue
    {{236, 212, 36}},   // yellow
}};

bool covers(scene_shape s, double px, double py, double cx, double cy, double r) {
  const double x = px - cx, y = py - cy;
  switch (s) {
    case scene_shape::circle:
      return x * x + y * y <= r * r;
    case scene_shape::square: {
      const double h = r * 0.886;  // the same area as the circle
      return std::fabs(x) <= h && std::fabs(y) <= h;
    }
    case scene_shape::triangle: {
      // Pointing up, circumradius 1.2 r: a base of ~2.1 r.
      const double R = 1.2 * r, top = -R, bottom = R / 2;
      if (y < top || y > bottom) return false;
      const double half = (y - top) / (bottom - top) * R * std::sqrt(3.0) / 2;
      return std::fabs(x) <= half;
    }
  }
  return false;
}

struct mover {
  int track;
  double x, y, tx, ty, speed = 0;
  int idle = 0, waited = 0, in_view = 0;
  bool leaving = false;
};

}  // namespace

const char* to_string(scene_shape s) noexcept {
  switch (s) {
    case scene_shape::circle: return "circle";
    case scene_shape::square: return "square";
    case scene_shape::triangle: return "triangle";
  }
  return "?";
}

const char* to_string(scene_color c) noexcept {
  switch (c) {
    case scene_color::red: return "red";
    case scene_color::green: return "green";
    case scene_color::blue: return "blue";
    case scene_color::yellow: return "yellow";
  }
  return "?";
}

status scene_config::validate() const {
  if (frames < 1) return error{errc::invalid_config, "a scene needs at least one frame"};
  if (size < 32 || size > 4096) return error{errc::invalid_config, "scene size " + std::to_string(size) + " is outside [32, 4096]"};
  if (max_objects < 0 || max_objects > 4) return error{errc::invalid_config, "max_objects must be 0..4 (counts are answered 0..4)"};
  if (min_radius < 2 || max_radius < min_radius || 4 * max_radius > size)
    return error{errc::invalid_config, "radii must satisfy 2 <= min_radius <= max_radius <= size / 4"};
  if (max_speed <= 0 || max_speed > size / 4.0) return error{errc::invalid_config, "max_speed must be in (0, size / 4]"};
  if (idle_share < 0 || idle_share >= 1) return error{errc::invalid_config, "idle_share must be in [0, 1)"};
  return {};
}

expected<scene> scene::make(const scene_config& config) {
  if (auto st = config.validate(); !st) return st.err();
  scene sc(config);
  rng r(config.seed);
  const double size = config.size;
  std::vector<mover> live;
  int last_spawn = -1000;

  auto clear_of_others = [&](double x, double y, double radius, int self) {
    for (const auto& m : live) {
      if (m.track == self) continue;
      const double need = radius + sc.tracks_[m.track].radius + 6;
      if (std::hypot(m.x - x, m.y - y) < need || std::hypot(m.tx - x, m.ty - y) < need) return false;
    }
    return true;
  };
  auto inside_target = [&](mover& m) {
    const double rad = sc.tracks_[m.track].radius, lo = rad + 2, hi = size - rad - 2;
    for (int attempt = 0; attempt < 40; ++attempt) {
      const double x = r.uniform(lo, hi), y = r.uniform(lo, hi);
      if (clear_of_others(x, y, rad, m.track) || attempt == 39) {
        m.tx = x;
        m.ty = y;
        return;
      }
    }
  };
  // A trip between two places takes about 0.4 of the side at the mean speed;
  // pauses are long enough that a shape stands still idle_share of its time.
  const double mean_speed = (std::max(1.0, config.max_speed * 0.4) + config.max_speed) / 2;
  const double mean_move = 0.4 * size / mean_speed;
  const double mean_idle = mean_move * config.idle_share / (1 - config.idle_share);
  auto speed = [&] { return r.uniform(std::max(1.0, config.max_speed * 0.4), config.max_speed); };
  auto spawn = [&](int frame, bool inside_already) {
    track t;
    t.id = static_cast<int>(sc.tracks_.size());
    t.shape = static_cast<scene_shape>(r.below(scene_shape_count));
    t.color = static_cast<scene_color>(r.below(scene_color_count));
    t.radius = r.uniform(config.min_radius, config.max_radius);
    t.first = frame;
    sc.tracks_.push_back(t);
    mover m{t.id, 0, 0, 0, 0};
    inside_target(m);
    if (inside_already) {
      m.x = m.tx;
      m.y = m.ty;
      m.idle = static_cast<int>(r.uniform(0, 2 * mean_idle));
    } else {
      // From just outside one edge, towards the first place inside.
      const int edge = r.below(4);
      const double along = r.uniform(t.radius + 2, size - t.radius - 2), out = -t.radius - 1;
      m.x = edge == 0 ? out : edge == 1 ? size - out : along;
      m.y = edge == 2 ? out : edge == 3 ? size - out : along;
      m.speed = speed();
    }
    live.push_back(m);
  };

  for (int s = 0, n = r.below(config.max_objects + 1); s < n; ++s) spawn(0, true);
  for (int frame = 0; frame < config.frames; ++frame) {
    if (frame > 0 && static_cast<int>(live.size()) < config.max_objects && frame - last_spawn > 15 && r.chance(0.02)) {
      spawn(frame, false);
      last_spawn = frame;
    }
    for (auto& m : live) {
      auto& t = sc.tracks_[m.track];
      if (frame > t.first) {
        if (m.idle > 0) {
          --m.idle;
          if (m.idle == 0) {
            m.speed = speed();
            if (m.in_view > 80 && r.chance(0.35)) {
              m.leaving = true;  // out over the nearest edge
              const double d[4] = {m.x, size - m.x, m.y, size - m.y};
              const int edge = static_cast<int>(std::min_element(d, d + 4) - d), out = -t.radius - 2;
              m.tx = edge == 0 ? out : edge == 1 ? size - out : m.x;
              m.ty = edge == 2 ? out : edge == 3 ? size - out : m.y;
            } else {
              inside_target(m);
            }
          }
        } else {
          const double dx = m.tx - m.x, dy = m.ty - m.y, dist = std::hypot(dx, dy);
          const double step = std::min(m.speed, dist);
          const double nx = dist > 0 ? m.x + dx / dist * step : m.x, ny = dist > 0 ? m.y + dy / dist * step : m.y;
          bool blocked = false;
          for (const auto& o : live)
            if (o.track != m.track &&
                std::hypot(o.x - nx, o.y - ny) < t.radius + sc.tracks_[o.track].radius + 4 &&
                std::hypot(o.x - nx, o.y - ny) < std::hypot(o.x - m.x, o.y - m.y))
              blocked = true;  // wait rather than overlap (moving apart is always allowed)
          if (blocked) {
            if (++m.waited > 30) {  // give way: somewhere else
              m.waited = 0;
              if (!m.leaving) inside_target(m);
            }
          } else {
            m.x = nx;
            m.y = ny;
            if (step >= dist) m.idle = 1 + static_cast<int>(r.uniform(0, 2 * mean_idle)) * (m.leaving ? 0 : 1);
          }
          if (step < dist && !blocked && !m.leaving && r.chance(0.5 / std::max(mean_move, 1.0)))
            m.idle = 1 + static_cast<int>(r.uniform(0, mean_idle));  // stop on the way now and then
        }
      }
      const bool in_frame = m.x > -t.radius && m.x < size + t.radius && m.y > -t.radius && m.y < size + t.radius;
      if (in_frame) ++m.in_view;
      t.x.push_back(m.x);
      t.y.push_back(m.y);
    }
    // A shape that left for good ends its track.
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const mover& m) {
                                const double rad = sc.tracks_[m.track].radius;
                                return m.leaving && m.idle > 0 &&
                                       (m.x <= -rad || m.x >= size + rad || m.y <= -rad || m.y >= size + rad);
                              }),
               live.end());
  }
  return sc;
}

std::vector<scene_object> scene::objects(int index) const {
  std::vector<scene_object> out;
  const double size = config_.size;
  for (const auto& t : tracks_) {
    const int k = index - t.first;
    if (k < 0 || k >= static_cast<int>(t.x.size())) continue;
    scene_object o;
    o.id = t.id;
    o.shape = t.shape;
    o.color = t.color;
    o.radius = t.radius;
    o.x = t.x[k];
    o.y = t.y[k];
    if (k > 0) {
      o.dx = t.x[k] - t.x[k - 1];
      o.dy = t.y[k] - t.y[k - 1];
    }
    const double ext = t.shape == scene_shape::triangle ? 1.2 * t.radius : t.radius;
    o.inside = o.x - ext >= 0 && o.x + ext <= size && o.y - ext >= 0 && o.y + ext <= size;
    o.partly = !o.inside && o.x + ext > 0 && o.x - ext < size && o.y + ext > 0 && o.y - ext < size;
    if (!o.inside && !o.partly) continue;
    o.entered_at = static_cast<std::uint64_t>(t.first);
    for (int j = 0; j <= k; ++j) {
      const double x = t.x[j], y = t.y[j];
      if (x + ext > 0 && x - ext < size && y + ext > 0 && y - ext < size) {
        o.entered_at = static_cast<std::uint64_t>(t.first + j);
        break;
      }
    }
    out.push_back(o);
  }
  return out;
}

scene_frame scene::truth(int index) const {
  scene_frame f;
  f.index = static_cast<std::uint64_t>(index);
  f.objects = objects(index);
  bool moving = false, ambiguous = false;
  for (const auto& o : f.objects) {
    moving |= o.moving();
    ambiguous |= o.partly;
  }
  f.questions.push_back({"moving", "Is any shape moving?", moving ? "yes" : "no"});
  if (ambiguous) return f;  // counts and places are not clear while a shape is half in view
  const double mid = config_.size / 2.0;
  for (int c = 0; c < scene_color_count; ++c) {
    const auto color = static_cast<scene_color>(c);
    const auto n = std::count_if(f.objects.begin(), f.objects.end(), [&](const auto& o) { return o.color == color; });
    f.questions.push_back({"count_color", std::string("How many ") + to_string(color) + " shapes are there?",
                           std::to_string(n)});
  }
  for (int s = 0; s < scene_shape_count; ++s) {
    const auto shape = static_cast<scene_shape>(s);
    const auto n = std::count_if(f.objects.begin(), f.objects.end(), [&](const auto& o) { return o.shape == shape; });
    f.questions.push_back({"count_shape", std::string("How many ") + to_string(shape) + "s are there?", std::to_string(n)});
    if (n == 1) {
      const auto& o = *std::find_if(f.objects.begin(), f.objects.end(), [&](const auto& x) { return x.shape == shape; });
      f.questions.push_back({"color_of", std::string("What color is the ") + to_string(shape) + "?", to_string(o.color)});
    }
    for (int c = 0; c < scene_color_count; ++c) {
      const auto color = static_cast<scene_color>(c);
      std::vector<const scene_object*> same;
      for (const auto& o : f.objects)
        if (o.shape == shape && o.color == color) same.push_back(&o);
      const std::string what = std::string(to_string(color)) + " " + to_string(shape);
      f.questions.push_back({"presence", "Is there a " + what + "?", same.empty() ? "no" : "yes"});
      // A place is asked only where it is clear: one such shape, off the midlines.
      if (same.size() == 1 && std::fabs(same[0]->x - mid) > 4 && std::fabs(same[0]->y - mid) > 4)
        f.questions.push_back({"position", "Where is the " + what + "?",
                               std::string(same[0]->y < mid ? "top" : "bottom") + (same[0]->x < mid ? " left" : " right")});
    }
  }
  return f;
}

void scene::draw(int index, std::uint8_t* rgb) const {
  const int size = config_.size;
  constexpr int sub = 4, exposure = 6;  // 4x4 samples a pixel; 6 instants over the frame's motion
  for (const auto& o : objects(index)) {
    const auto& col = palette[static_cast<int>(o.color)];
    const double ext = 1.25 * o.radius + 1;
    const int x0 = std::max(0, static_cast<int>(std::floor(std::min(o.x, o.x - o.dx) - ext)));
    const int x1 = std::min(size - 1, static_cast<int>(std::ceil(std::max(o.x, o.x - o.dx) + ext)));
    const int y0 = std::max(0, static_cast<int>(std::floor(std::min(o.y, o.y - o.dy) - ext)));
    const int y1 = std::min(size - 1, static_cast<int>(std::ceil(std::max(o.y, o.y - o.dy) + ext)));
    const int instants = o.moving() ? exposure : 1;
    for (int py = y0; py <= y1; ++py)
      for (int px = x0; px <= x1; ++px) {
        int hits = 0;
        for (int e = 0; e < instants; ++e) {
          // The shutter is open from the previous position to this one.
          const double t = instants == 1 ? 0.0 : 1.0 - static_cast<double>(e) / (instants - 1);
          const double cx = o.x - t * o.dx, cy = o.y - t * o.dy;
          for (int sy = 0; sy < sub; ++sy)
            for (int sx = 0; sx < sub; ++sx)
              hits += covers(o.shape, px + (sx + 0.5) / sub, py + (sy + 0.5) / sub, cx, cy, o.radius);
        }
        if (hits == 0) continue;
        const double a = static_cast<double>(hits) / (instants * sub * sub);
        std::uint8_t* p = rgb + (static_cast<std::size_t>(py) * size + px) * 3;
        for (int ch = 0; ch < 3; ++ch) p[ch] = static_cast<std::uint8_t>(std::lround(p[ch] * (1 - a) + col[ch] * a));
      }
  }
}

}  // namespace vlcache
