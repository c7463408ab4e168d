#pragma once
/// \file
/// The HTTP API's way into a running pipeline (connectors/chat_service):
/// a camera's question goes to the answer router as an on-demand question
/// about its latest frame; an image sent with a request is preprocessed as
/// the cameras' frames are, run through the encoder in full, answered once
/// under a stream id of its own (never a camera's), and forgotten.
/// The web server starts before the actors: until connect(), and after
/// disconnect(), questions are answered "starting" / "stopping" (503).

#include <caf/actor_system.hpp>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "actors/answer_router_actor.hpp"
#include "actors/audit_messages.hpp"
#include "connectors/chat_service.hpp"
#include "core/base/preprocess.hpp"

namespace vlcache::graph {

class pipeline_chat : public connectors::chat_service {
 public:
  pipeline_chat(caf::actor_system& sys, std::string model_id, std::vector<std::string> cameras,
                preprocess_config preprocess);

  /// The stages are running: questions go to them from now on. `encoder`
  /// may be invalid (the model runs on a node): images are then refused.
  void connect(actors::answer_router_actor router, actors::answerer_actor answerer, actors::auditor_actor encoder);
  /// The pipeline stops: questions are refused from now on.
  void disconnect();

  [[nodiscard]] std::string model_id() const override { return model_id_; }
  [[nodiscard]] std::vector<std::string> camera_names() const override { return cameras_; }
  [[nodiscard]] expected<connectors::chat_reply> ask(const std::string& camera, const connectors::owned_image* image,
                                                     const std::string& question, const ask_controls& controls) override;

 private:
  struct stages {
    actors::answer_router_actor router;
    actors::answerer_actor answerer;
    actors::auditor_actor encoder;
  };
  [[nodiscard]] expected<stages> running() const;
  [[nodiscard]] expected<connectors::chat_reply> ask_camera(const stages& s, const std::string& camera,
                                                            const std::string& question,
                                                            std::shared_ptr<const ask_controls> controls);
  [[nodiscard]] expected<connectors::chat_reply> ask_image(const stages& s, const connectors::owned_image& image,
                                                           const std::string& question,
                                                           std::shared_ptr<const ask_controls> controls);

  caf::actor_system& sys_;
  std::string model_id_;
  std::vector<std::string> cameras_;
  preprocess_config preprocess_;
  mutable std::mutex mutex_;
  std::optional<stages> stages_;
  bool stopped_ = false;
  std::atomic<std::uint32_t> next_image_{0};
};

}  // namespace vlcache::graph
