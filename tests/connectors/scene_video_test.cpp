// A rendered scene written to disk and read back: the frames the pipeline
// reads and the truth it scores answers with must be the scene's own, and a
// broken truth file is named with its line.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "connectors/scene_video.hpp"
#include "connectors/video_reader.hpp"

namespace vlcache::connectors {
namespace {

std::string fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("vlcache_scene_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

TEST(scene_video, a_written_scene_reads_back_with_its_truth_and_frames) {
  scene_config c;
  c.seed = 14;  // a shape moves in its first 12 frames
  c.frames = 12;
  auto sc = scene::make(c);
  ASSERT_TRUE(sc) << sc.err().message;
  const auto dir = fresh_dir("roundtrip");
  auto w = write_scene(*sc, {VLCACHE_SAMPLE_VIDEO, 590}, dir);
  ASSERT_TRUE(w) << w.err().message;
  EXPECT_TRUE(is_scene_folder(dir));
  auto t = read_scene(dir);
  ASSERT_TRUE(t) << t.err().message;
  ASSERT_EQ(t->questions.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    const auto truth = sc->truth(i);
    ASSERT_EQ(t->questions[i].size(), truth.questions.size()) << "frame " << i;
    for (std::size_t q = 0; q < truth.questions.size(); ++q) {
      EXPECT_EQ(t->questions[i][q].question, truth.questions[q].question);
      EXPECT_EQ(t->questions[i][q].answer, truth.questions[q].answer);
      EXPECT_EQ(t->questions[i][q].kind, truth.questions[q].kind);
    }
  }
  // Each object's line carries the motion of its exposure (what training's
  // blur labels are drawn from), the scene's own.
  std::ifstream lines(dir + "/truth.jsonl");
  std::string line;
  int moving = 0;
  for (int i = 0; std::getline(lines, line); ++i) {
    const auto objects = sc->truth(i).objects;
    const auto j = nlohmann::json::parse(line);
    ASSERT_EQ(j.at("objects").size(), objects.size()) << "frame " << i;
    for (std::size_t k = 0; k < objects.size(); ++k) {
      EXPECT_EQ(j["objects"][k].at("dx").get<double>(), objects[k].dx) << "frame " << i;
      EXPECT_EQ(j["objects"][k].at("dy").get<double>(), objects[k].dy) << "frame " << i;
      moving += objects[k].moving();
    }
  }
  EXPECT_GT(moving, 0) << "seed 14 moves a shape in its first 12 frames";
  // The pattern the pipeline opens reads every frame, at the scene's size.
  auto r = video_reader::open({t->frames_pattern});
  ASSERT_TRUE(r) << r.err().message;
  int frames = 0;
  for (auto f = (*r)->read(); f; f = (*r)->read()) {
    EXPECT_EQ(f->source_index, static_cast<std::uint64_t>(frames));
    EXPECT_EQ(f->view.width, 160);
    ++frames;
  }
  EXPECT_EQ(frames, 12);
  std::filesystem::remove_all(dir);
}

TEST(scene_video, a_folder_without_truth_is_not_a_scene) {
  const auto dir = fresh_dir("empty");
  std::filesystem::create_directories(dir + "/frames");
  EXPECT_FALSE(is_scene_folder(dir));
  auto t = read_scene(dir);
  ASSERT_FALSE(t);
  EXPECT_NE(t.err().message.find(dir), std::string::npos) << t.err().message;
  EXPECT_NE(t.err().message.find("truth.jsonl"), std::string::npos) << t.err().message;
  std::filesystem::remove_all(dir);
}

TEST(scene_video, a_broken_truth_line_is_named_by_file_and_line) {
  const auto dir = fresh_dir("broken");
  std::filesystem::create_directories(dir + "/frames");
  std::ofstream(dir + "/truth.jsonl") << R"({"frame":0,"questions":[{"kind":"moving","question":"Is any shape moving?","answer":"no"}]})"
                                      << "\n{\"frame\":1,\"objects\":[]\n";
  auto t = read_scene(dir);
  ASSERT_FALSE(t);
  EXPECT_NE(t.err().message.find("truth.jsonl:2"), std::string::npos) << t.err().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vlcache::connectors
