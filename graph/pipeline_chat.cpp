#include "graph/pipeline_chat.hpp"

#include <caf/all.hpp>

#include "actors/actor_error.hpp"
#include "core/base/elapsed.hpp"

namespace vlcache::graph {
namespace {

/// The longest a question may wait for its answer (queue, prefill, decode).
constexpr auto answer_timeout = std::chrono::minutes(10);

/// Images sent with requests get stream ids of their own: above every
/// camera's (which count up from 0) and below the audits' (the top bit).
constexpr stream_id first_image_stream = 0x40000000u;

}  // namespace

pipeline_chat::pipeline_chat(caf::actor_system& sys, std::string model_id, std::vector<std::string> cameras,
                             preprocess_config preprocess)
    : sys_(sys), model_id_(std::move(model_id)), cameras_(std::move(cameras)), preprocess_(std::move(preprocess)) {}

void pipeline_chat::connect(actors::answer_router_actor router, actors::answerer_actor answerer,
                            actors::auditor_actor encoder) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopped_) stages_ = stages{std::move(router), std::move(answerer), std::move(encoder)};
}

void pipeline_chat::disconnect() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  stages_.reset();
}

expected<pipeline_chat::stages> pipeline_chat::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stages_) return *stages_;
  return error{errc::cancelled, stopped_ ? "the pipeline is stopping" : "the pipeline is starting; ask again shortly"};
}

expected<connectors::chat_reply> pipeline_chat::ask(const std::string& camera, const connectors::owned_image* image,
                                                    const std::string& question, const ask_controls& controls) {
  if (model_id_.empty()) return error{errc::invalid_config, "this pipeline has no language model ([llm])"};
  auto s = running();
  if (!s) return s.err();
  auto shared = std::make_shared<const ask_controls>(controls);
  if (image) return ask_image(*s, *image, question, std::move(shared));
  return ask_camera(*s, camera, question, std::move(shared));
}

expected<connectors::chat_reply> pipeline_chat::ask_camera(const stages& s, const std::string& camera,
                                                           const std::string& question,
                                                           std::shared_ptr<const ask_controls> controls) {
  caf::scoped_actor asker{sys_};
  std::optional<expected<connectors::chat_reply>> out;
  asker->request(s.router, answer_timeout, actors::ask_atom::value,
                 actors::on_demand_question{camera, question, std::move(controls)})
      .receive(
          [&](const actors::answer_record& r) {
            out = connectors::chat_reply{r.result, {camera, r.tag.seq, r.tag.capture_ms, r.changed_share}};
          },
          [&](const caf::error& e) { out = actors::from_caf_error(sys_, e); });
  return std::move(*out);
}

expected<connectors::chat_reply> pipeline_chat::ask_image(const stages& s, const connectors::owned_image& image,
                                                          const std::string& question,
                                                          std::shared_ptr<const ask_controls> controls) {
  if (!s.encoder)
    return error{errc::invalid_config, "this pipeline's encoder runs on a node: images sent with a question are not "
                                       "encoded here (ask about a camera:// instead)"};
  auto pre = preprocess(image.view(), preprocess_);
  if (!pre) return error{errc::invalid_image, "the image: " + pre.err().message};
  actors::answer_job job;
  job.tag.stream = first_image_stream + (next_image_++ % first_image_stream);
  job.tag.stream_name = "(image sent with a request)";
  job.question = question;
  job.controls = std::move(controls);
  job.publish = false;
  job.read_at = actors::steady::now();
  job.image = std::make_shared<const preprocessed_image>(std::move(*pre));
  caf::scoped_actor asker{sys_};
  std::optional<error> failed;
  // The full forward, as an audit's (never a camera's cache).
  asker->request(s.encoder, answer_timeout, actors::full_atom::value,
                 actors::full_request{job.tag.stream, job.image, {}, false})
      .receive([&](const actors::full_reply& r) { job.features = r.features; },
               [&](const caf::error& e) { failed = actors::from_caf_error(sys_, e); });
  if (failed) return *failed;
  job.encode_ms = ms_since(job.read_at);
  std::optional<expected<connectors::chat_reply>> out;
  const stream_id stream = job.tag.stream;
  asker->request(s.answerer, answer_timeout, actors::ask_atom::value, std::move(job))
      .receive([&](const actors::answer_record& r) { out = connectors::chat_reply{r.result, {"", 0, 0, 1.0}}; },
               [&](const caf::error& e) { out = actors::from_caf_error(sys_, e); });
  caf::anon_send(s.answerer, actors::end_stream_atom::value, stream);  // its K/V go now
  return std::move(*out);
}

}  // namespace vlcache::graph
