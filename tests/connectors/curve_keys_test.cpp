// CURVE key files: round trip, permissions, allow-lists, and errors that
// name the file. And the sockets: an allowed camera's frames arrive, an
// unknown key's do not and are counted.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "support/free_port.hpp"
#include "connectors/curve_keys.hpp"
#include "connectors/frame_socket.hpp"
#include "connectors/request_endpoint.hpp"
#include "connectors/wire_format.hpp"

namespace vlcache::connectors {
namespace {

namespace fs = std::filesystem;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("vlcache_keys_" + std::to_string(::getpid()) + "_" +
                                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

TEST(curve_keys, a_secret_key_others_can_read_is_refused) {
  temp_dir dir;
  ASSERT_TRUE(write_key_pair(*generate_key_pair(), dir / "open"));
  ASSERT_EQ(::chmod((dir / "open.key").c_str(), 0644), 0);
  auto pair = read_key_pair(dir / "open.key");
  ASSERT_FALSE(pair);
  EXPECT_NE(pair.err().message.find("open to others (mode 0644): chmod 600"), std::string::npos) << pair.err().message;
  ASSERT_EQ(::chmod((dir / "open.key").c_str(), 0600), 0);
  EXPECT_TRUE(read_key_pair(dir / "open.key"));
}

TEST(curve_keys, a_written_pair_reads_back_and_the_secret_is_the_owners_alone) {
  ASSERT_TRUE(curve_available());
  temp_dir dir;
  auto pair = generate_key_pair();
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->public_key.size(), 40u);
  ASSERT_TRUE(write_key_pair(*pair, dir / "cam"));
  auto back = read_key_pair(dir / "cam.key");
  ASSERT_TRUE(back) << back.err().message;
  EXPECT_EQ(back->public_key, pair->public_key);
  EXPECT_EQ(back->secret_key, pair->secret_key);
  EXPECT_EQ(*read_public_key(dir / "cam.pub"), pair->public_key);
  EXPECT_FALSE(read_key_pair(dir / "cam.pub")) << "a .pub file holds no secret";
  struct stat st {};
  ASSERT_EQ(::stat((dir / "cam.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = write_key_pair(*generate_key_pair(), dir / "cam");
  ASSERT_FALSE(again);
  EXPECT_NE(again.err().message.find("not overwritten"), std::string::npos);
  EXPECT_EQ(read_key_pair(dir / "cam.key")->secret_key, pair->secret_key);
}

TEST(curve_keys, allowed_keys_come_from_a_folder_of_pub_files_or_one_list) {
  temp_dir dir;
  fs::create_directories(dir.path / "clients");
  auto a = *generate_key_pair(), b = *generate_key_pair();
  ASSERT_TRUE(write_key_pair(a, dir / "clients/a"));
  ASSERT_TRUE(write_key_pair(b, dir / "clients/b"));
  auto folder = read_allowed_keys(dir / "clients");
  ASSERT_TRUE(folder) << folder.err().message;
  EXPECT_EQ(*folder, (std::vector<std::string>{a.public_key, b.public_key}));
  std::ofstream(dir / "list") << "# two cameras\npublic-key = \"" << a.public_key << "\"\n\npublic-key = \""
                              << b.public_key << "\"\n";
  EXPECT_EQ(*read_allowed_keys(dir / "list"), *folder);
}

TEST(curve_keys, bad_files_are_named) {
  temp_dir dir;
  auto missing = read_key_pair(dir / "nope.key");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find(dir / "nope.key"), std::string::npos);
  std::ofstream(dir / "short.pub") << "public-key = \"tooshort\"\n";
  auto bad = read_public_key(dir / "short.pub");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("not a 40-character Z85 key"), std::string::npos) << bad.err().message;
  std::ofstream(dir / "garbled") << "public-key tooshort\n";
  auto garbled = read_allowed_keys(dir / "garbled");
  ASSERT_FALSE(garbled);
  EXPECT_NE(garbled.err().message.find("garbled:1"), std::string::npos) << garbled.err().message;
  fs::create_directories(dir.path / "empty");
  auto empty = read_allowed_keys(dir / "empty");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.err().message.find("allows no client key"), std::string::npos);
}

using test::free_port;

// Over loopback TCP: the puller lets in the allowed key only.
TEST(curve_sockets, only_an_allowed_key_gets_frames_through) {
  const auto server = *generate_key_pair(), allowed = *generate_key_pair(), stranger = *generate_key_pair();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto puller = frame_puller::open(endpoint, true, curve_server_keys{server, {allowed.public_key}, {}});
  ASSERT_TRUE(puller) << puller.err().message;
  const auto refused_before = curve_refused_total();
  auto good = frame_pusher::connect(endpoint, curve_client_keys{allowed, server.public_key});
  auto bad = frame_pusher::connect(endpoint, curve_client_keys{stranger, server.public_key});
  ASSERT_TRUE(good && bad);
  wire_frame f;
  f.stream = "cam";
  f.encoding = frame_encoding::raw_bgr;
  f.width = 2;
  f.height = 1;
  f.payload.assign(6, 7);
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got < 5 && std::chrono::steady_clock::now() < deadline) {
    f.stream = "cam";
    (void)(*good)->send(encode_wire(f));
    f.stream = "intruder";
    (void)(*bad)->send(encode_wire(f));
    for (auto& m : (*puller)->receive(std::chrono::milliseconds(50), 16)) {
      ASSERT_TRUE(m.frame);
      EXPECT_EQ(m.frame->stream, "cam") << "a frame from the unknown key got in";
      ++got;
    }
  }
  EXPECT_GE(got, 5);
  // The stranger's handshake may come after the allowed frames: wait for it.
  while (curve_refused_total() == refused_before && std::chrono::steady_clock::now() < deadline) {
    f.stream = "intruder";
    (void)(*bad)->send(encode_wire(f));
    for (auto& m : (*puller)->receive(std::chrono::milliseconds(50), 16))
      EXPECT_EQ(m.frame->stream, "cam") << "a frame from the unknown key got in";
  }
  EXPECT_GT(curve_refused_total(), refused_before);
}

TEST(curve_sockets, the_request_endpoint_answers_an_allowed_key_only) {
  const auto server = *generate_key_pair(), allowed = *generate_key_pair(), stranger = *generate_key_pair();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  auto rep = request_server::start(
      endpoint, [](const std::string& stream, const std::string& q) { return "{\"echo\":\"" + stream + q + "\"}"; },
      curve_server_keys{server, {allowed.public_key}, {}});
  ASSERT_TRUE(rep) << rep.err().message;
  auto ok = ask_endpoint(endpoint, "cam", "?", 20.0, curve_client_keys{allowed, server.public_key});
  ASSERT_TRUE(ok) << ok.err().message;
  EXPECT_EQ(*ok, "{\"echo\":\"cam?\"}");
  EXPECT_FALSE(ask_endpoint(endpoint, "cam", "?", 1.0, curve_client_keys{stranger, server.public_key}));
  EXPECT_FALSE(ask_endpoint(endpoint, "cam", "?", 1.0)) << "no key: no answer";
  EXPECT_EQ((*rep)->served(), 1u);
}

}  // namespace
}  // namespace vlcache::connectors
