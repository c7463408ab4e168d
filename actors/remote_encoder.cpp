#include "actors/remote_encoder.hpp"

#include <map>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <cstring>

#include "actors/actor_error.hpp"

namespace vlcache::actors {

void configure_link(caf::actor_system_config& cfg, const link_tls& tls) {
  cfg.load<caf::io::middleman>();
  if (!tls.enabled()) return;
  cfg.openssl_certificate = tls.cert;
  cfg.openssl_key = tls.key;
  cfg.openssl_cafile = tls.ca;
  cfg.load<caf::openssl::manager>();
}

caf::expected<encoder_node_actor> reach_encoder_node(caf::actor_system& sys, const std::string& host,
                                                    std::uint16_t port, bool tls) {
  if (tls) return caf::openssl::remote_actor<encoder_node_actor>(sys, host, port);
  return sys.middleman().remote_actor<encoder_node_actor>(host, port);
}

caf::expected<std::uint16_t> serve_encoder_node(caf::actor_system& sys, const encoder_node_actor& node,
                                                const std::string& host, std::uint16_t port, bool tls) {
  if (tls) return caf::openssl::publish(node, port, host.c_str(), true);
  return sys.middleman().publish(node, port, host.c_str(), true);
}

void announce_remote_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<remote_encode_request>("remote_encode_request");
  cfg.add_message_type<remote_encode_reply>("remote_encode_reply");
  cfg.add_message_type<remote_encoder_info>("remote_encoder_info");
  cfg.add_message_type<remote_frame>("remote_frame");
  cfg.add_message_type<remote_result>("remote_result");
}

namespace {

/// The node's own stream ids: one per (client, client's stream id), so two
/// pipelines that both number their cameras from 0 never share a token store.
struct node_streams {
  std::map<std::pair<std::string, stream_id>, stream_id> local;
  stream_id next = 0;
  stream_id of(const std::string& client, stream_id stream) {
    auto [it, fresh] = local.try_emplace({client, stream}, next);
    if (fresh) ++next;
    return it->second;
  }
};

/// The pipeline that sent the current message: its process (CAF node id;
/// a pipeline's requests come from several actors, all in that process).
std::string client_of(caf::local_actor* self) {
  const auto& sender = self->current_sender();
  return sender ? caf::to_string(sender->node()) : std::string();
}

}  // namespace

encoder_node_actor::behavior_type remote_encoder_node(encoder_node_actor::pointer self,
                                                      std::shared_ptr<vision_encoder> encoder) {
  auto streams = std::make_shared<node_streams>();
  return {
      [encoder](encoder_info_atom) {
        const auto& c = encoder->config();
        return remote_encoder_info{c.image_size, c.patch_size, c.num_patches(), encoder->description()};
      },
      [self, encoder, streams](const remote_encode_request& req) -> caf::result<remote_encode_reply> {
        const auto& c = encoder->config();
        const std::size_t pixel_bytes = sizeof(float) * 3 * c.image_size * c.image_size;
        const std::string client = client_of(self);
        std::vector<std::vector<float>> pixels(req.frames.size());
        std::vector<frame_request> batch;
        std::map<stream_id, stream_id> theirs;  // node id -> the client's
        for (std::size_t i = 0; i < req.frames.size(); ++i) {
          const auto& f = req.frames[i];
          if (f.pixels.size() != pixel_bytes)
            return to_caf_error({errc::invalid_argument, "remote frame of stream " + std::to_string(f.stream) +
                                                             " has " + std::to_string(f.pixels.size()) +
                                                             " pixel bytes, the model needs " + std::to_string(pixel_bytes)});
          pixels[i].resize(pixel_bytes / sizeof(float));
          std::memcpy(pixels[i].data(), f.pixels.data(), pixel_bytes);
          const stream_id local = streams->of(client, f.stream);
          theirs[local] = f.stream;
          batch.push_back({local, pixels[i].data(), {f.positions.begin(), f.positions.end()}, f.full});
        }
        auto out = encoder->encode(batch);
        if (!out) return to_caf_error(out.err());
        remote_encode_reply reply;
        for (const auto& r : *out) {
          remote_result rr;
          rr.stream = theirs.at(r.stream);
          rr.computed = r.computed;
          rr.full = r.full;
          rr.layer_tokens = r.layer_tokens;
          const auto shape = r.features.shape();
          rr.rows = shape[0];
          rr.cols = shape[1];
          rr.features.resize(sizeof(float) * r.features.numel());
          std::memcpy(rr.features.data(), r.features.data(), rr.features.size());
          reply.results.push_back(std::move(rr));
        }
        return reply;
      },
      [self, encoder, streams](end_stream_atom, stream_id stream) {
        auto it = streams->local.find({client_of(self), stream});
        if (it == streams->local.end()) return;  // another client's stream, or never seen: nothing to end
        encoder->end_stream(it->second);
        streams->local.erase(it);
      },
  };
}

namespace {

remote_encode_request to_request(const std::vector<frame_request>& batch, int pixels_per_frame) {
  remote_encode_request req;
  for (const auto& f : batch) {
    remote_frame rf;
    rf.stream = f.stream;
    rf.pixels.resize(sizeof(float) * pixels_per_frame);
    std::memcpy(rf.pixels.data(), f.pixels, rf.pixels.size());
    rf.positions.assign(f.positions.begin(), f.positions.end());
    rf.full = f.full;
    req.frames.push_back(std::move(rf));
  }
  return req;
}

expected<std::vector<frame_result>> from_reply(remote_encode_reply& reply) {
  std::vector<frame_result> results;
  for (auto& r : reply.results) {
    if (r.features.size() != sizeof(float) * static_cast<std::size_t>(r.rows * r.cols))
      return error{errc::io_error, "remote encoder: a reply for stream " + std::to_string(r.stream) +
                                       " has the wrong size"};
    frame_result fr;
    fr.stream = r.stream;
    fr.features = tensor_handle::from_floats(reinterpret_cast<const float*>(r.features.data()), {r.rows, r.cols});
    fr.computed = r.computed;
    fr.layer_tokens = r.layer_tokens;
    fr.full = r.full;
    results.push_back(std::move(fr));
  }
  return results;
}

}  // namespace

std::vector<expected<std::vector<frame_result>>> encode_remote(caf::actor_system& sys,
                                                               const std::vector<node_batch>& batches,
                                                               int pixels_per_frame, std::chrono::seconds timeout,
                                                               const std::atomic<bool>* cancel) {
  std::vector<expected<std::vector<frame_result>>> out(
      batches.size(), error{errc::io_error, "remote encoder: no reply within " + std::to_string(timeout.count()) + " s"});
  caf::scoped_actor self{sys};
  // Each node is monitored for the length of its request: one that dies (its
  // process killed, its connection dropped) fails its batch at once instead
  // of after the timeout.
  std::vector<bool> waiting(batches.size(), true);
  std::size_t open = batches.size();
  for (std::size_t i = 0; i < batches.size(); ++i) {
    self->monitor(batches[i].node);
    self->send(batches[i].node, to_request(batches[i].frames, pixels_per_frame));
  }
  auto index_of = [&](const caf::actor_addr& who) {
    for (std::size_t i = 0; i < batches.size(); ++i)
      if (waiting[i] && batches[i].node.address() == who) return i;
    return batches.size();
  };
  auto settle = [&](std::size_t i, expected<std::vector<frame_result>> r) {
    if (i >= batches.size()) return;
    waiting[i] = false;
    --open;
    out[i] = std::move(r);
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool wait = open > 0;
  self->receive_while([&] { return wait && open > 0; })(
      [&](remote_encode_reply& reply) { settle(index_of(caf::actor_cast<caf::actor_addr>(self->current_sender())), from_reply(reply)); },
      [&](caf::error& e) {
        settle(index_of(caf::actor_cast<caf::actor_addr>(self->current_sender())), error{errc::io_error, "remote encoder: " + sys.render(e)});
      },
      [&](const caf::down_msg& d) {
        settle(index_of(d.source),
               error{errc::io_error, "remote encoder: the node went down (" + sys.render(d.reason) + ")"});
      },
      // Short waits: the deadline and a stop are noticed within 0.2 s even
      // when a node neither answers nor goes down (a hung process).
      caf::after(std::chrono::milliseconds(200)) >> [&] {
        if (cancel && *cancel) {
          for (std::size_t i = 0; i < batches.size(); ++i)
            if (waiting[i])
              out[i] = error{errc::cancelled, "remote encoder: the pipeline is stopping; the batch was not waited for"};
          wait = false;
        } else if (std::chrono::steady_clock::now() >= deadline) {
          wait = false;
        }
      });
  for (const auto& b : batches) self->demonitor(b.node.address());
  return out;
}

}  // namespace vlcache::actors
