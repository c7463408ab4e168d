#include "connectors/chat_api.hpp"

#include <random>

namespace vlcache::connectors {
namespace {

using nlohmann::json;

api_error bad(std::string message, std::string param = {}, std::string code = {}) {
  return api_error{400, std::move(message), std::move(param), std::move(code), 0};
}

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 409: return "conflict_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "internal_server_error" : "invalid_request_error";
  }
}

/// A boolean field set to true (absent or null: false).
bool flag(const json& body, const char* key) {
  return body.contains(key) && body[key].is_boolean() && body[key].get<bool>();
}

/// The user message's parts: its text joined, and its one image URL.
std::optional<api_error> read_content(const json& content, chat_request& out) {
  if (content.is_string()) {
    out.question = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad("messages[].content must be a string or an array of parts", "messages");
  std::string url;
  bool image = false;
  for (const auto& part : content) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string())
        return bad("a text part needs a string \"text\"", "messages");
      if (!out.question.empty()) out.question += "\n";
      out.question += part["text"].get<std::string>();
    } else if (type == "image_url") {
      if (image) return bad("the message has more than one image: vlcache answers about one", "messages");
      image = true;
      const json& iu = part.contains("image_url") ? part["image_url"] : json();
      if (iu.is_string()) url = iu.get<std::string>();
      else if (iu.is_object() && iu.contains("url") && iu["url"].is_string()) url = iu["url"].get<std::string>();
      else return bad("an image_url part needs \"image_url\": {\"url\": ...}", "messages");
    } else {
      return bad("a content part of type '" + type + "' is not taken (text and image_url are)", "messages");
    }
  }
  if (!image) return std::nullopt;
  if (url.rfind("camera://", 0) == 0) {
    out.camera = url.substr(9);
    if (out.camera.empty()) return bad("camera:// names no camera", "messages");
  } else if (url.rfind("data:", 0) == 0) {
    out.image_url = std::move(url);
  } else {
    return bad("image URLs are camera://NAME or a data URL (vlcache fetches nothing from the network)", "messages");
  }
  return std::nullopt;
}

std::optional<api_error> read_messages(const json& body, chat_request& out) {
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return bad("\"messages\" must be a non-empty array", "messages");
  int users = 0;
  for (const auto& m : body["messages"]) {
    const std::string role = m.is_object() && m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (role != "user")
      return bad("a '" + role + "' message is not taken: the model's prompt has one user question about one image, "
                 "so send one user message",
                 "messages");
    if (++users > 1) return bad("more than one user message: send one question", "messages");
    if (auto e = read_content(m.contains("content") ? m["content"] : json(), out)) return e;
  }
  if (out.question.empty()) return bad("the user message has no text: ask a question", "messages");
  return std::nullopt;
}

/// A number field in [lo, hi], or its absence.
std::optional<api_error> number(const json& body, const char* key, double lo, double hi, double& into) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_number() || body[key].get<double>() < lo || body[key].get<double>() > hi)
    return bad(std::string("\"") + key + "\" must be a number from " + json(lo).dump() + " to " + json(hi).dump(), key);
  into = body[key].get<double>();
  return std::nullopt;
}

std::optional<api_error> read_sampling(const json& body, const chat_limits& limits, chat_request& out) {
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (!body.contains(key) || body[key].is_null()) continue;
    if (!body[key].is_number_integer() || body[key].get<long long>() < 1 || body[key].get<long long>() > limits.max_tokens)
      return bad(std::string("\"") + key + "\" must be an integer from 1 to " + std::to_string(limits.max_tokens), key);
    out.sampling.max_new_tokens = body[key].get<int>();
    break;
  }
  if (auto e = number(body, "temperature", 0.0, 2.0, out.sampling.temperature)) return e;
  if (auto e = number(body, "top_p", 1e-9, 1.0, out.sampling.top_p)) return e;
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) return bad("\"seed\" must be an integer", "seed");
    out.sampling.seed = static_cast<std::uint64_t>(body["seed"].get<long long>());
  } else if (out.sampling.temperature > 0) {
    out.sampling.seed = std::random_device{}();  // as vLLM: without a seed, each sample differs
  }
  if (body.contains("n") && !body["n"].is_null() && body["n"] != 1) return bad("only n = 1 is served", "n");
  return std::nullopt;
}

std::optional<api_error> read_stop_and_stream(const json& body, chat_request& out) {
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      out.stop = {s.get<std::string>()};
    } else if (s.is_array() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](const json& x) { return x.is_string(); })) {
      for (const auto& x : s) out.stop.push_back(x.get<std::string>());
    } else {
      return bad("\"stop\" must be a string or an array of up to 4 strings", "stop");
    }
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return bad("\"stream\" must be true or false", "stream");
    out.stream = body["stream"].get<bool>();
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    if (!out.stream) return bad("\"stream_options\" is only allowed with \"stream\": true", "stream_options");
    const json& so = body["stream_options"];
    if (!so.is_object()) return bad("\"stream_options\" must be an object", "stream_options");
    out.include_usage = flag(so, "include_usage");
  }
  return std::nullopt;
}

/// What vlcache does not do is refused by name rather than ignored.
std::optional<api_error> refuse_unserved(const json& body) {
  if (flag(body, "logprobs") || (body.contains("top_logprobs") && !body["top_logprobs"].is_null()))
    return bad("log probabilities are not served", "logprobs");
  for (const char* key : {"tools", "functions", "logit_bias"})
    if (body.contains(key) && !body[key].is_null() && !body[key].empty())
      return bad(std::string("\"") + key + "\" is not served", key);
  for (const char* key : {"frequency_penalty", "presence_penalty"})
    if (body.contains(key) && body[key].is_number() && body[key].get<double>() != 0.0)
      return bad(std::string("\"") + key + "\" is not served (only 0)", key);
  if (body.contains("response_format") && body["response_format"].is_object() &&
      body["response_format"].value("type", "text") != "text")
    return bad("only text responses are served", "response_format");
  return std::nullopt;
}

std::variant<chat_request, api_error> read_request(std::string_view text, const chat_limits& limits,
                                                   const sampling_options& defaults);

}  // namespace

json error_body(const api_error& e) {
  return json{{"error",
               {{"message", e.message},
                {"type", error_type(e.status)},
                {"param", e.param.empty() ? json() : json(e.param)},
                {"code", e.code.empty() ? json() : json(e.code)}}}};
}

std::variant<chat_request, api_error> parse_chat_request(std::string_view text, const chat_limits& limits,
                                                         const sampling_options& defaults) {
  // A field of an unexpected type (a null, a number for a string) that a
  // check below reads with its default is this request's error, not the server's.
  try {
    return read_request(text, limits, defaults);
  } catch (const json::exception& e) {
    return bad(std::string("a field has the wrong type (") + e.what() + ")", "", "invalid_type");
  }
}

namespace {
std::variant<chat_request, api_error> read_request(std::string_view text, const chat_limits& limits,
                                                   const sampling_options& defaults) {
  const json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) return bad("the body is not JSON", "", "invalid_json");
  if (!body.is_object()) return bad("the body must be a JSON object", "", "invalid_json");
  chat_request out;
  out.sampling = defaults;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) return bad("\"model\" must be a string", "model");
    out.model = body["model"].get<std::string>();
  }
  if (auto e = read_messages(body, out)) return *e;
  if (out.question.size() > limits.max_question_bytes)
    return api_error{413,
                     "the question has " + std::to_string(out.question.size()) + " bytes; at most " +
                         std::to_string(limits.max_question_bytes) + " are taken",
                     "messages", "question_too_long", 0};
  if (auto e = read_sampling(body, limits, out)) return *e;
  if (auto e = read_stop_and_stream(body, out)) return *e;
  if (auto e = refuse_unserved(body)) return *e;
  return out;
}
}  // namespace

const char* finish_reason(const answer& a) noexcept {
  return a.stopped_on_eos || a.stopped_on_string ? "stop" : "length";
}

token_usage usage_of(const answer& a) noexcept {
  return {a.prompt_tokens, std::max(0, a.prompt_tokens - a.rows_computed), static_cast<int>(a.ids.size())};
}

json usage_body(const answer& a) {
  const token_usage u = usage_of(a);
  return json{{"prompt_tokens", u.prompt},
              {"completion_tokens", u.completion},
              {"total_tokens", u.prompt + u.completion},
              {"prompt_tokens_details", {{"cached_tokens", u.cached}}}};
}

json origin_body(const answer& a, const chat_origin& o) {
  return json{{"camera", o.camera.empty() ? json() : json(o.camera)},
              {"frame_seq", o.camera.empty() ? json() : json(o.seq)},
              {"capture_ms", o.camera.empty() ? json() : json(o.capture_ms)},
              {"image_tokens", a.image_tokens},
              {"vision_tokens_computed_share", o.vision_computed_share},
              {"image_rows_recomputed", a.image_recomputed},
              {"prompt_rows_computed", a.rows_computed},
              {"prefill_ms", a.prefill_ms},
              {"decode_ms", a.decode_ms}};
}

json completion_body(const completion_head& h, const answer& a, const chat_origin& o) {
  return json{{"id", h.id},
              {"object", "chat.completion"},
              {"created", h.created},
              {"model", h.model},
              {"choices",
               json::array({{{"index", 0},
                             {"message", {{"role", "assistant"}, {"content", a.text}}},
                             {"logprobs", nullptr},
                             {"finish_reason", finish_reason(a)}}})},
              {"usage", usage_body(a)},
              {"vlcache", origin_body(a, o)}};
}

json chunk_body(const completion_head& h, json delta, const char* finish) {
  return json{{"id", h.id},
              {"object", "chat.completion.chunk"},
              {"created", h.created},
              {"model", h.model},
              {"choices", json::array({{{"index", 0},
                                        {"delta", std::move(delta)},
                                        {"logprobs", nullptr},
                                        {"finish_reason", finish ? json(finish) : json()}}})}};
}

json usage_chunk_body(const completion_head& h, const answer& a, const chat_origin& o) {
  return json{{"id", h.id},          {"object", "chat.completion.chunk"}, {"created", h.created},
              {"model", h.model},    {"choices", json::array()},          {"usage", usage_body(a)},
              {"vlcache", origin_body(a, o)}};
}

json models_body(const std::string& model_id, std::int64_t created) {
  json data = json::array();
  if (!model_id.empty())
    data.push_back({{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "vlcache"}});
  return json{{"object", "list"}, {"data", data}};
}

}  // namespace vlcache::connectors
