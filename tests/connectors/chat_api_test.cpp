// OpenAI's chat-completions protocol as vlcache takes it: what a request
// may hold, what is refused (with the status and the field at fault), and
// the shapes of responses, chunks and errors; data-URL images checked
// against their limits before they are decoded.

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "connectors/chat_api.hpp"
#include "connectors/image_upload.hpp"

namespace vlcache::connectors {
namespace {

using nlohmann::json;

json camera_question(const std::string& text, const std::string& url = "camera://gate") {
  return json{{"model", "m"},
              {"messages",
               json::array({{{"role", "user"},
                             {"content", json::array({{{"type", "text"}, {"text", text}},
                                                      {{"type", "image_url"}, {"image_url", {{"url", url}}}}})}}})}};
}

std::variant<chat_request, api_error> parse(const json& body, chat_limits limits = {}) {
  return parse_chat_request(body.dump(), limits, sampling_options{});
}

api_error refusal(const json& body, chat_limits limits = {}) {
  auto r = parse(body, limits);
  EXPECT_TRUE(std::holds_alternative<api_error>(r)) << body.dump();
  return std::holds_alternative<api_error>(r) ? std::get<api_error>(r) : api_error{};
}

TEST(chat_request, a_camera_question_with_its_controls) {
  auto body = camera_question("How many red shapes?");
  body["max_tokens"] = 7;
  body["temperature"] = 0.5;
  body["seed"] = 3;
  body["stop"] = "\n";
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = parse(body);
  ASSERT_TRUE(std::holds_alternative<chat_request>(r)) << std::get<api_error>(r).message;
  const auto& q = std::get<chat_request>(r);
  EXPECT_EQ(q.model, "m");
  EXPECT_EQ(q.camera, "gate");
  EXPECT_EQ(q.question, "How many red shapes?");
  EXPECT_EQ(q.sampling.max_new_tokens, 7);
  EXPECT_DOUBLE_EQ(q.sampling.temperature, 0.5);
  EXPECT_EQ(q.sampling.seed, 3u);
  EXPECT_EQ(q.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(q.stream && q.include_usage);
}

TEST(chat_request, plain_string_content_and_data_urls) {
  json body{{"messages", json::array({{{"role", "user"}, {"content", "hello"}}})}};
  auto r = parse(body);
  ASSERT_TRUE(std::holds_alternative<chat_request>(r));
  EXPECT_EQ(std::get<chat_request>(r).question, "hello");
  EXPECT_TRUE(std::get<chat_request>(r).camera.empty());
  auto d = parse(camera_question("what?", "data:image/png;base64,AAAA"));
  ASSERT_TRUE(std::holds_alternative<chat_request>(d));
  EXPECT_EQ(std::get<chat_request>(d).image_url, "data:image/png;base64,AAAA");
}

TEST(chat_request, what_is_refused_names_its_field) {
  EXPECT_EQ(refusal(json::parse("[1]")).code, "invalid_json");
  EXPECT_EQ(parse_chat_request("{not json", {}, {}).index(), 1u);
  EXPECT_EQ(refusal(json{{"messages", json::array()}}).param, "messages");
  auto sys = camera_question("q");
  sys["messages"].insert(sys["messages"].begin(), json{{"role", "system"}, {"content", "be brief"}});
  EXPECT_NE(refusal(sys).message.find("'system'"), std::string::npos);
  auto two = camera_question("q");
  two["messages"][0]["content"].push_back({{"type", "image_url"}, {"image_url", {{"url", "camera://b"}}}});
  EXPECT_NE(refusal(two).message.find("more than one image"), std::string::npos);
  EXPECT_NE(refusal(camera_question("q", "https://example.com/a.jpg")).message.find("fetches nothing"), std::string::npos);
  EXPECT_EQ(refusal(camera_question("")).param, "messages");
  auto n = camera_question("q");
  n["n"] = 2;
  EXPECT_EQ(refusal(n).param, "n");
  auto hot = camera_question("q");
  hot["temperature"] = 3;
  EXPECT_EQ(refusal(hot).param, "temperature");
  auto many = camera_question("q");
  many["max_tokens"] = 100000;
  EXPECT_EQ(refusal(many).param, "max_tokens");
  auto stop = camera_question("q");
  stop["stop"] = json::array({"a", "b", "c", "d", "e"});
  EXPECT_EQ(refusal(stop).param, "stop");
  auto options_alone = camera_question("q");
  options_alone["stream_options"] = {{"include_usage", true}};
  EXPECT_EQ(refusal(options_alone).param, "stream_options");
  auto logprobs = camera_question("q");
  logprobs["logprobs"] = true;
  EXPECT_EQ(refusal(logprobs).param, "logprobs");
  auto nulls = camera_question("q");
  nulls["logprobs"] = nullptr;
  nulls["stop"] = nullptr;
  nulls["n"] = nullptr;
  EXPECT_TRUE(std::holds_alternative<chat_request>(parse(nulls))) << "null fields are as if absent";
  auto numeric_part = camera_question("q");
  numeric_part["messages"][0]["content"][0]["type"] = 5;
  EXPECT_EQ(refusal(numeric_part).code, "invalid_type") << "a field of the wrong type is the request's error";
  auto penalty = camera_question("q");
  penalty["presence_penalty"] = 0.5;
  EXPECT_EQ(refusal(penalty).param, "presence_penalty");
}

TEST(chat_request, a_question_over_the_limit_is_413) {
  chat_limits small;
  small.max_question_bytes = 10;
  auto e = refusal(camera_question("a question longer than ten bytes"), small);
  EXPECT_EQ(e.status, 413);
  EXPECT_EQ(e.code, "question_too_long");
}

TEST(chat_response, shapes_follow_openai) {
  answer a;
  a.text = "two";
  a.ids = {5, 6, 2};
  a.stopped_on_eos = true;
  a.prompt_tokens = 120;
  a.rows_computed = 30;
  a.image_tokens = 100;
  a.image_recomputed = 12;
  const completion_head h{"chatcmpl-1", 1700000000, "m"};
  const chat_origin o{"gate", 41, 4100.0, 0.12};
  const auto c = completion_body(h, a, o);
  EXPECT_EQ(c["object"], "chat.completion");
  EXPECT_EQ(c["choices"][0]["message"]["content"], "two");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["usage"]["prompt_tokens"], 120);
  EXPECT_EQ(c["usage"]["completion_tokens"], 3);
  EXPECT_EQ(c["usage"]["total_tokens"], 123);
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], 90);
  EXPECT_EQ(c["vlcache"]["frame_seq"], 41);
  EXPECT_EQ(c["vlcache"]["image_rows_recomputed"], 12);
  a.stopped_on_eos = false;
  EXPECT_STREQ(finish_reason(a), "length");
  const auto chunk = chunk_body(h, {{"content", "t"}});
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(usage_chunk_body(h, a, o)["choices"].empty());
  const auto err = error_body({404, "no camera 'x'", "messages", "camera_not_found", 0});
  EXPECT_EQ(err["error"]["type"], "not_found_error");
  EXPECT_EQ(err["error"]["param"], "messages");
  EXPECT_EQ(models_body("m", 1)["data"][0]["id"], "m");
  EXPECT_TRUE(models_body("", 1)["data"].empty());
}

std::string data_url(const char* type, const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) b64 += alphabet[(v >> k) & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    b64 += alphabet[(v >> 18) & 63];
    b64 += alphabet[(v >> 12) & 63];
    b64 += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    for (int k = 18; k >= 6; k -= 6) b64 += alphabet[(v >> k) & 63];
    b64 += "=";
  }
  return std::string("data:image/") + type + ";base64," + b64;
}

std::string encoded(const char* ext, int w, int h) {
  cv::Mat m(h, w, CV_8UC3, cv::Scalar(10, 200, 30));
  std::vector<std::uint8_t> out;
  cv::imencode(ext, m, out);
  return std::string(out.begin(), out.end());
}

TEST(image_upload, base64_is_strict) {
  EXPECT_EQ(decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(decode_base64("aGVsbG8"), "hello");
  EXPECT_FALSE(decode_base64("aGV$bG8="));
  EXPECT_FALSE(decode_base64("a"));
}

TEST(image_upload, png_and_jpeg_decode_with_their_size) {
  for (const char* type : {"png", "jpeg"}) {
    auto img = decode_data_url(data_url(type, encoded(std::string(".").append(type == std::string("png") ? "png" : "jpg").c_str(), 40, 30)), {});
    ASSERT_TRUE(img) << type << ": " << img.err().message;
    EXPECT_EQ(img->width, 40);
    EXPECT_EQ(img->height, 30);
  }
}

TEST(image_upload, limits_are_checked_before_decoding) {
  image_limits limits;
  limits.max_pixels = 100 * 100;
  // A PNG header that claims 100000 x 100000 pixels and holds nothing else:
  // refused from the header, never decoded.
  std::string header = encoded(".png", 8, 8).substr(0, 24);
  header[16] = 0, header[17] = 1, header[18] = static_cast<char>(0x86), header[19] = static_cast<char>(0xA0);
  header[20] = 0, header[21] = 1, header[22] = static_cast<char>(0x86), header[23] = static_cast<char>(0xA0);
  auto huge = decode_data_url(data_url("png", header), limits);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.err().code, errc::capacity);
  EXPECT_NE(huge.err().message.find("100000x100000"), std::string::npos) << huge.err().message;
  limits.max_bytes = 100;
  auto big = decode_data_url(data_url("png", encoded(".png", 64, 64) + std::string(200, '\0')), limits);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.err().code, errc::capacity);
}

TEST(image_upload, bad_data_is_an_invalid_image) {
  EXPECT_EQ(decode_data_url("data:image/gif;base64,R0lG", {}).err().code, errc::invalid_image);
  EXPECT_EQ(decode_data_url("data:image/png;base64,!!!!", {}).err().code, errc::invalid_image);
  EXPECT_EQ(decode_data_url(data_url("png", "not a png at all, just text"), {}).err().code, errc::invalid_image);
  // A PNG header with nothing after it: the size is readable, the pixels are not.
  EXPECT_EQ(decode_data_url(data_url("png", encoded(".png", 8, 8).substr(0, 33)), {}).err().code, errc::invalid_image);
}

}  // namespace
}  // namespace vlcache::connectors
