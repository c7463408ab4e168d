// The OpenCV video reader on the real sample video.

#include <gtest/gtest.h>

#include "connectors/image_file.hpp"
#include "connectors/video_reader.hpp"

#include <filesystem>
#include <fstream>

namespace vlcache::connectors {
namespace {

TEST(video_reader, reads_every_frame_of_the_sample_video) {
  video_reader_config c;
  c.source = VLCACHE_SAMPLE_VIDEO;
  auto r = video_reader::open(c);
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_NEAR((*r)->source_fps(), 10.0, 0.01);
  std::uint64_t n = 0;
  for (;;) {
    auto f = (*r)->read();
    if (!f) {
      EXPECT_EQ(f.err().code, errc::not_found);
      break;
    }
    EXPECT_EQ(f->seq, n);
    EXPECT_EQ(f->view.width, 768);
    EXPECT_EQ(f->view.height, 576);
    EXPECT_EQ(f->view.channels, 3);
    EXPECT_EQ(f->view.order, channel_order::bgr);
    ++n;
  }
  EXPECT_EQ(n, 795u);
}

TEST(video_reader, samples_at_the_requested_rate_from_an_offset) {
  video_reader_config c;
  c.source = VLCACHE_SAMPLE_VIDEO;
  c.sample_fps = 1.0;
  c.start_frame = 100;
  c.max_frames = 5;
  auto r = video_reader::open(c);
  ASSERT_TRUE(r);
  std::vector<std::uint64_t> idx;
  for (auto f = (*r)->read(); f; f = (*r)->read()) idx.push_back(f->source_index);
  EXPECT_EQ(idx, (std::vector<std::uint64_t>{100, 110, 120, 130, 140}));
}

TEST(video_reader, missing_source_is_named) {
  video_reader_config c;
  c.source = "/nonexistent/camera.avi";
  auto r = video_reader::open(c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("/nonexistent/camera.avi"), std::string::npos);
}

TEST(image_file, missing_and_undecodable_files_are_named) {
  auto missing = read_image("/nonexistent/a.png");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("/nonexistent/a.png"), std::string::npos);
  auto not_image = read_image(VLCACHE_CONFIGS "/scan.toml");
  ASSERT_FALSE(not_image);
  EXPECT_NE(not_image.err().message.find("scan.toml"), std::string::npos);
}

}  // namespace
}  // namespace vlcache::connectors

namespace vlcache::connectors {
namespace {
TEST(video_reader, reads_an_image_folder_in_name_order) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "vlcache_folder_source";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string data = "/usr/share/doc/opencv-doc/examples/data/";
  fs::copy_file(data + "fruits.jpg", dir / "b.jpg");
  fs::copy_file(data + "baboon.jpg", dir / "a.jpg");
  std::ofstream(dir / "notes.txt") << "not an image";
  video_reader_config c;
  c.source = dir.string();
  auto r = video_reader::open(c);
  ASSERT_TRUE(r) << r.err().message;
  auto first = (*r)->read();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->view.height, 512);  // baboon.jpg, "a.jpg": 512x512
  auto second = (*r)->read();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->view.height, 480);  // fruits.jpg: 512x480
  EXPECT_FALSE((*r)->read());
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto empty = video_reader::open(c);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.err().message.find("holds no images"), std::string::npos);
  fs::remove_all(dir);
}
}  // namespace
}  // namespace vlcache::connectors
