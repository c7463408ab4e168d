#pragma once
/// \file
/// OpenAI's chat-completions protocol, as vLLM serves it, for the questions
/// vlcache answers: one user message of text and at most one image part,
/// the image a camera of the pipeline (`camera://NAME`) or a data URL. Pure
/// JSON in and out: the HTTP routes (connectors/chat_routes) call these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/models/answer.hpp"
#include "core/models/language_model.hpp"

namespace vlcache::connectors {

/// An error in OpenAI's shape, with its HTTP status.
struct api_error {
  int status = 400;
  std::string message;
  std::string param;  ///< the request field at fault; empty: none
  std::string code;   ///< a short machine-readable reason; empty: none
  double retry_after_s = 0;  ///< 429: when to ask again
};
/// {"error": {"message", "type", "param", "code"}}; the type follows the status.
[[nodiscard]] nlohmann::json error_body(const api_error& e);

struct chat_limits {
  std::size_t max_question_bytes = 4000;
  int max_tokens = 256;  ///< the most a request may ask for
};

/// A chat-completions request, checked.
struct chat_request {
  std::string model;      ///< as asked; empty when not given
  std::string question;   ///< the user message's text parts, joined
  std::string camera;     ///< from camera://NAME; empty when an image is sent or none
  std::string image_url;  ///< a data URL, decoded after the request is accepted
  sampling_options sampling;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
};

/// Checks `body` against the protocol and the limits; `defaults` fills what
/// the request leaves out (max_tokens, temperature, top_p).
[[nodiscard]] std::variant<chat_request, api_error> parse_chat_request(std::string_view body,
                                                                       const chat_limits& limits,
                                                                       const sampling_options& defaults);

/// Where an answer came from, for the vlcache extension of a response.
struct chat_origin {
  std::string camera;     ///< empty: an image sent with the request
  std::uint64_t seq = 0;  ///< the camera's frame
  double capture_ms = 0;  ///< the frame's capture time in the camera's clock
  double vision_computed_share = 1.0;  ///< the frame's patch tokens the encoder computed
};

/// What every response and chunk of one completion share.
struct completion_head {
  std::string id;  ///< chatcmpl-...
  std::int64_t created = 0;
  std::string model;
};

/// "stop" (end of answer, or a stop string) or "length".
[[nodiscard]] const char* finish_reason(const answer& a) noexcept;
/// An answer's token counts as OpenAI reports them: the prompt, the rows of
/// it whose K/V were reused (cached), the generated tokens (EOS included).
struct token_usage {
  int prompt = 0, cached = 0, completion = 0;
};
[[nodiscard]] token_usage usage_of(const answer& a) noexcept;
/// prompt_tokens, completion_tokens, total_tokens and
/// prompt_tokens_details.cached_tokens (prompt rows whose K/V were reused).
[[nodiscard]] nlohmann::json usage_body(const answer& a);
/// The "vlcache" extension: the frame and what was recomputed for it.
[[nodiscard]] nlohmann::json origin_body(const answer& a, const chat_origin& o);
/// A whole chat.completion.
[[nodiscard]] nlohmann::json completion_body(const completion_head& h, const answer& a, const chat_origin& o);
/// One chat.completion.chunk: `delta` ({"role"} or {"content"}), and the
/// finish reason on the last (null before).
[[nodiscard]] nlohmann::json chunk_body(const completion_head& h, nlohmann::json delta,
                                        const char* finish = nullptr);
/// The chunk after the last that carries usage (stream_options.include_usage): no choices.
[[nodiscard]] nlohmann::json usage_chunk_body(const completion_head& h, const answer& a, const chat_origin& o);
/// GET /v1/models: the pipeline's language model, or an empty list.
[[nodiscard]] nlohmann::json models_body(const std::string& model_id, std::int64_t created);

}  // namespace vlcache::connectors
