#include "connectors/scene_video.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "connectors/answer_json.hpp"
#include "connectors/video_reader.hpp"

namespace vlcache::connectors {
namespace {

nlohmann::json to_json(const scene_frame& f) {
  nlohmann::json objects = nlohmann::json::array(), questions = nlohmann::json::array();
  for (const auto& o : f.objects)
    objects.push_back({{"id", o.id},
                       {"shape", to_string(o.shape)},
                       {"color", to_string(o.color)},
                       {"x", o.x},
                       {"y", o.y},
                       {"radius", o.radius},
                       {"moving", o.moving()},
                       {"dx", o.dx},  // the exposure's motion: the blur runs from (x - dx, y - dy) to (x, y)
                       {"dy", o.dy},
                       {"inside", o.inside},
                       {"entered_at", o.entered_at}});
  for (const auto& q : f.questions) questions.push_back({{"kind", q.kind}, {"question", q.question}, {"answer", q.answer}});
  return {{"frame", f.index}, {"objects", objects}, {"questions", questions}};
}

}  // namespace

expected<scene_written> write_scene(const scene& sc, const scene_background& background, const std::string& out_dir) {
  const auto& c = sc.config();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(out_dir) / "frames", ec);
  if (ec) return error{errc::io_error, "cannot create '" + out_dir + "/frames': " + ec.message()};
  auto reader = video_reader::open({background.video, 0.0, background.start_frame, static_cast<std::uint64_t>(c.frames)});
  if (!reader) return reader.err();
  std::ofstream truth(out_dir + "/truth.jsonl");
  if (!truth) return error{errc::io_error, "cannot write '" + out_dir + "/truth.jsonl'"};

  scene_written out;
  out.frames_pattern = out_dir + "/frames/%06d.png";
  cv::Rect window;
  for (int i = 0; i < c.frames; ++i) {
    auto f = (*reader)->read();
    if (!f)
      return error{errc::invalid_argument, "background '" + background.video + "' ends after " + std::to_string(i) +
                                               " frames from frame " + std::to_string(background.start_frame) +
                                               "; the scene needs " + std::to_string(c.frames)};
    const cv::Mat bgr(f->view.height, f->view.width, CV_8UC3, const_cast<std::uint8_t*>(f->view.data), f->view.stride());
    if (i == 0) {
      // A seeded square window: 60-100 % of the short side, anywhere in the frame.
      const int side_max = std::min(bgr.cols, bgr.rows);
      std::uint64_t h = c.seed * 0x2545F4914F6CDD1Dull + 7;
      auto next = [&h](int n) {
        h ^= h >> 12, h ^= h << 25, h ^= h >> 27;
        return static_cast<int>((h * 0x2545F4914F6CDD1Dull >> 33) % static_cast<std::uint64_t>(std::max(n, 1)));
      };
      const int side = side_max * 6 / 10 + next(side_max * 4 / 10 + 1);
      window = cv::Rect(next(bgr.cols - side + 1), next(bgr.rows - side + 1), side, side);
    }
    cv::Mat small, rgb;
    cv::resize(bgr(window), small, cv::Size(c.size, c.size), 0, 0, cv::INTER_AREA);
    cv::cvtColor(small, rgb, cv::COLOR_BGR2RGB);
    sc.draw(i, rgb.data);
    cv::cvtColor(rgb, small, cv::COLOR_RGB2BGR);
    char name[32];
    std::snprintf(name, sizeof name, "/frames/%06d.png", i);
    if (!cv::imwrite(out_dir + name, small)) return error{errc::io_error, "cannot write '" + out_dir + name + "'"};
    const auto t = sc.truth(i);
    out.questions += static_cast<int>(t.questions.size());
    truth << to_json_line(to_json(t)) << "\n";
  }
  out.frames = c.frames;
  std::ofstream meta(out_dir + "/scene.json");
  meta << nlohmann::json{{"seed", c.seed},
                         {"frames", c.frames},
                         {"size", c.size},
                         {"max_objects", c.max_objects},
                         {"background", background.video},
                         {"background_start_frame", background.start_frame},
                         {"window", {window.x, window.y, window.width}},
                         {"frames_pattern", "frames/%06d.png"}}
              .dump(2)
       << "\n";
  if (!truth || !meta) return error{errc::io_error, "cannot write the truth of '" + out_dir + "'"};
  return out;
}

bool is_scene_folder(const std::string& folder) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(folder) / "truth.jsonl", ec) &&
         std::filesystem::is_directory(std::filesystem::path(folder) / "frames", ec);
}

expected<std::vector<scene_truth>> read_scenes(const std::vector<std::string>& folders) {
  std::vector<scene_truth> scenes;
  for (const auto& folder : folders) {
    auto s = read_scene(folder);
    if (!s) return s.err();
    scenes.push_back(std::move(*s));
  }
  return scenes;
}

expected<scene_truth> read_scene(const std::string& folder) {
  const auto path = folder + "/truth.jsonl";
  std::ifstream f(path);
  if (!f) return error{errc::not_found, "scene folder '" + folder + "' has no truth.jsonl (write one with vlcache scene)"};
  scene_truth s;
  s.folder = folder;
  s.frames_pattern = folder + "/frames/%06d.png";
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("questions") || !j["questions"].is_array())
      return error{errc::invalid_argument, path + ":" + std::to_string(n) + ": not a truth line (no \"questions\" array)"};
    std::vector<scene_question> qs;
    for (const auto& q : j["questions"]) {
      if (!q.is_object() || !q.contains("question") || !q.contains("answer"))
        return error{errc::invalid_argument, path + ":" + std::to_string(n) + ": a question without \"question\" or \"answer\""};
      qs.push_back({q.value("kind", ""), q.value("question", ""), q.value("answer", "")});
    }
    s.questions.push_back(std::move(qs));
  }
  if (s.questions.empty()) return error{errc::invalid_argument, path + " is empty"};
  return s;
}

}  // namespace vlcache::connectors
