#pragma once
/// \file
/// The encoder stage on another machine: a CAF remote actor behind the io
/// middleman. Pixels and tokens cross the network as bytes (float arrays);
/// every message type is announced on both sides (announce_remote_types).
/// The node keeps the per-stream token stores; gate and drift control stay
/// in the pipeline.
///
/// Node side:  remote_encoder_node(encoder)   accepts
///   encoder_info_atom                 -> remote_encoder_info
///   remote_encode_request             -> remote_encode_reply (or an error)
///   (end_stream_atom, stream)         -> frees the stream's token store

#include <atomic>
#include <caf/actor_system_config.hpp>
#include <caf/behavior.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/meta/type_name.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/frame_messages.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache::actors {

struct remote_frame {
  std::uint32_t stream = 0;
  std::vector<std::uint8_t> pixels;  ///< CHW f32, as bytes
  std::vector<std::int32_t> positions;
  bool full = false;
};

struct remote_encode_request {
  std::vector<remote_frame> frames;
};

struct remote_result {
  std::uint32_t stream = 0;
  std::int32_t computed = 0;
  std::int64_t layer_tokens = 0;
  bool full = false;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint8_t> features;  ///< [rows, cols] f32, as bytes
};

struct remote_encode_reply {
  std::vector<remote_result> results;
};

struct remote_encoder_info {
  std::int32_t image_size = 0, patch_size = 0, num_patches = 0;
  std::string description;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_frame& x) {
  return f(caf::meta::type_name("remote_frame"), x.stream, x.pixels, x.positions, x.full);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_encode_request& x) {
  return f(caf::meta::type_name("remote_encode_request"), x.frames);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_result& x) {
  return f(caf::meta::type_name("remote_result"), x.stream, x.computed, x.layer_tokens, x.full, x.rows, x.cols, x.features);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_encode_reply& x) {
  return f(caf::meta::type_name("remote_encode_reply"), x.results);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, remote_encoder_info& x) {
  return f(caf::meta::type_name("remote_encoder_info"), x.image_size, x.patch_size, x.num_patches, x.description);
}

using encoder_info_atom = caf::atom_constant<caf::atom("encinfo")>;

/// The node's contract. A pipeline that reaches a node checks it: an actor
/// published on the address with another interface is refused.
using encoder_node_actor =
    caf::typed_actor<caf::replies_to<encoder_info_atom>::with<remote_encoder_info>,
                     caf::replies_to<remote_encode_request>::with<remote_encode_reply>,
                     caf::reacts_to<end_stream_atom, stream_id>>;

/// Announces the remote message types; both processes must call it.
void announce_remote_types(caf::actor_system_config& cfg);

/// The link's TLS files (PEM): our certificate and key, and the CA that
/// signed the other side's. Both sides must present a certificate the other
/// verifies (CAF's OpenSSL module: peer verification required on both ends);
/// a plain or unverified peer is refused.
struct link_tls {
  std::string cert, key, ca;
  [[nodiscard]] bool enabled() const { return !cert.empty(); }
};

/// Loads the io middleman, and with `tls` CAF's OpenSSL manager and files.
void configure_link(caf::actor_system_config& cfg, const link_tls& tls);

/// The encoder node at host:port, over TLS when the system was configured
/// with it; the error says why it cannot be reached.
[[nodiscard]] caf::expected<encoder_node_actor> reach_encoder_node(caf::actor_system& sys, const std::string& host,
                                                           std::uint16_t port, bool tls);
/// Serves `node` on host:port (TLS as configured); the bound port.
[[nodiscard]] caf::expected<std::uint16_t> serve_encoder_node(caf::actor_system& sys, const encoder_node_actor& node,
                                                              const std::string& host, std::uint16_t port, bool tls);

/// The node's actor: runs `encoder` for the requests of one pipeline.
/// Token stores are keyed by (client, the client's stream id): pipelines
/// sharing a node never see or change each other's tokens.
encoder_node_actor::behavior_type remote_encoder_node(encoder_node_actor::pointer self,
                                                      std::shared_ptr<vision_encoder> encoder);

/// The pipeline side: a vision_encoder::encode over the network (blocking;
/// called from the encoder actor's own thread). Fails after `timeout`, or
/// at once when the node goes down meanwhile (it is monitored).
/// Several nodes' batches at once: all are sent before any reply is awaited,
/// so the nodes work in parallel; one result per batch, in order.
/// `cancel`, when it becomes true, ends the wait within a fifth of a second:
/// the batches not answered by then come back as errc::cancelled.
struct node_batch {
  encoder_node_actor node;
  std::vector<frame_request> frames;
};
[[nodiscard]] std::vector<expected<std::vector<frame_result>>> encode_remote(
    caf::actor_system& sys, const std::vector<node_batch>& batches, int pixels_per_frame, std::chrono::seconds timeout,
    const std::atomic<bool>* cancel = nullptr);

}  // namespace vlcache::actors
