// The safetensors reader: dtypes, shards, and strict header validation with
// errors that name the file and tensor.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/models/safetensors.hpp"

namespace vlcache {
namespace {

const std::string dir = std::string(VLCACHE_FIXTURES) + "/clip_tiny/";

std::string temp_file(const std::string& name, const std::string& bytes) {
  const auto path = (std::filesystem::temp_directory_path() / ("vlcache_" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string with_header(const std::string& json, std::size_t data_bytes) {
  std::string s(8, '\0');
  const std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s + json + std::string(data_bytes, '\x01');
}

TEST(safetensors, f16_and_bf16_decode_exactly_as_torch_does) {
  auto w = weight_set::open_file(dir + "dtypes.safetensors");
  ASSERT_TRUE(w) << w.err().message;
  const std::vector<std::int64_t> shape{5, 7};
  auto f16 = w->read_f32("x.f16", shape), f16_ref = w->read_f32("x.f16.as_f32", shape);
  auto bf16 = w->read_f32("x.bf16", shape), bf16_ref = w->read_f32("x.bf16.as_f32", shape);
  auto f32 = w->read_f32("x.f32", shape);
  ASSERT_TRUE(f16 && f16_ref && bf16 && bf16_ref && f32);
  EXPECT_EQ(*f16, *f16_ref);
  EXPECT_EQ(*bf16, *bf16_ref);
  EXPECT_NE(*f16, *f32) << "the fixture should exercise rounding";
  auto ids = w->read_f32("ids", {6});
  ASSERT_FALSE(ids);
  EXPECT_NE(ids.err().message.find("tensor 'ids' has dtype I64"), std::string::npos) << ids.err().message;
}

TEST(safetensors, shape_mismatch_names_file_tensor_and_shapes) {
  auto w = weight_set::open_file(dir + "dtypes.safetensors");
  auto r = w->read_f32("x.f32", {7, 5});
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("dtypes.safetensors: tensor 'x.f32' has shape [5, 7], the config needs [7, 5]"),
            std::string::npos) << r.err().message;
  EXPECT_NE(w->read_f32("nope", {1}).err().message.find("'nope' is missing"), std::string::npos);
}

TEST(safetensors, sharded_folder_matches_single_file) {
  auto sharded = weight_set::open_folder(dir + "llava_sharded");
  auto single = weight_set::open_folder(dir + "llava_old");
  ASSERT_TRUE(sharded) << sharded.err().message;
  ASSERT_TRUE(single);
  EXPECT_EQ(sharded->names(), single->names());
  const std::string name = "vision_tower.vision_model.encoder.layers.1.mlp.fc1.weight";
  EXPECT_EQ(*sharded->read_f32(name, {64, 32}), *single->read_f32(name, {64, 32}));
}

struct bad_file_case {
  const char* name;
  std::string bytes;
  const char* needle;
};

TEST(safetensors, rejects_malformed_files_naming_what_is_wrong) {
  const std::vector<bad_file_case> cases{
      {"short", "abc", "truncated"},
      {"huge_len", with_header("{}", 0).replace(0, 8, std::string("\xff\xff\xff\x7f\0\0\0\0", 8)), "header length"},
      {"bad_json", with_header("{\"a\": [", 0), "not valid JSON"},
      {"not_object", with_header("[1,2]", 0), "not a JSON object"},
      {"bad_dtype", with_header(R"({"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4), "tensor 'w': unknown dtype"},
      {"past_end", with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "outside the data section"},
      {"size_mismatch", with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12"},
      {"overlap", with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlap"},
      {"bad_shape", with_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "not a list of sizes"},
      {"no_offsets", with_header(R"({"w":{"dtype":"F32","shape":[1]}})", 4), "needs dtype, shape and data_offsets"},
  };
  for (const auto& c : cases) {
    const auto path = temp_file(std::string(c.name) + ".safetensors", c.bytes);
    auto f = safetensors_file::open(path);
    ASSERT_FALSE(f) << c.name;
    EXPECT_NE(f.err().message.find(path), std::string::npos) << c.name << ": " << f.err().message;
    EXPECT_NE(f.err().message.find(c.needle), std::string::npos) << c.name << ": " << f.err().message;
    std::remove(path.c_str());
  }
}

TEST(safetensors, index_that_names_a_missing_tensor_is_an_error) {
  namespace fs = std::filesystem;
  const auto folder = fs::temp_directory_path() / "vlcache_bad_index";
  fs::create_directories(folder);
  fs::copy_file(dir + "llava_sharded/model-00001-of-00003.safetensors", folder / "a.safetensors",
                fs::copy_options::overwrite_existing);
  std::ofstream(folder / "model.safetensors.index.json") << R"({"weight_map": {"ghost.weight": "a.safetensors"}})";
  auto w = weight_set::open_folder(folder.string());
  ASSERT_FALSE(w);
  EXPECT_NE(w.err().message.find("'ghost.weight' listed in the index is missing"), std::string::npos)
      << w.err().message;
  fs::remove_all(folder);
}

TEST(safetensors, write_then_read_round_trips) {
  const std::vector<float> v{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  const auto path = (std::filesystem::temp_directory_path() / "vlcache_roundtrip.safetensors").string();
  ASSERT_TRUE(write_safetensors(path, {{"t", {{2, 3}, v.data()}}}, {{"k", "v"}}));
  auto w = weight_set::open_file(path);
  ASSERT_TRUE(w);
  EXPECT_EQ(*w->read_f32("t", {2, 3}), v);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace vlcache
