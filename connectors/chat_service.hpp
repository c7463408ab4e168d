#pragma once
/// \file
/// What the HTTP API (connectors/chat_routes) needs of a running pipeline:
/// its language model's name, its cameras, and answers. The pipeline
/// (graph/) implements it over its actors; connectors/ never sees them.

#include <string>
#include <vector>

#include "connectors/chat_api.hpp"
#include "connectors/image_file.hpp"
#include "core/models/answerer.hpp"
#include "core/base/error.hpp"

namespace vlcache::connectors {

struct chat_reply {
  answer result;
  chat_origin origin;
};

class chat_service {
 public:
  virtual ~chat_service() = default;
  /// The language model's id; empty when the pipeline has none.
  [[nodiscard]] virtual std::string model_id() const = 0;
  /// The cameras the configuration names (network cameras appear once they send).
  [[nodiscard]] virtual std::vector<std::string> camera_names() const = 0;
  /// Blocks until answered: about `image` (encoded in full) when given,
  /// else about `camera`'s latest frame from its cached tokens and K/V.
  /// Errors by code: not_found (no such camera or no frame of it yet),
  /// capacity (the answerer's queue is full), invalid_config (the pipeline
  /// cannot do it: no language model, or its encoder runs on a node),
  /// invalid_argument or invalid_image (this request), cancelled (the
  /// pipeline is starting or stopping).
  [[nodiscard]] virtual expected<chat_reply> ask(const std::string& camera, const owned_image* image,
                                                 const std::string& question, const ask_controls& controls) = 0;
};

}  // namespace vlcache::connectors
