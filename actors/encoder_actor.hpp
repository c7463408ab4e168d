#pragma once
/// \file
/// The encoder, one per device: collects the planned frames of many streams
/// (each frame_job carries its source's plan, core/models/cache_step) and runs their
/// tokens as one batch once `batch_tokens` tokens wait, `batch_timeout` passed since
/// the first waiting frame, or a second frame of a waiting stream arrives
/// (a stream's frames must run in order).
///
/// Accepts:
///   frame_job (with decision)  -> batches it
///   (flush_atom, batch id)     -> the timeout of that batch
///   view_change                -> the stream's token store follows its views
///                                 (after its waiting frames are encoded)
///   stats_atom                 -> replies encoder_counters
///   full_atom, full_request    -> the frame's full forward for an answer audit
///                                 (also a shadow check of the answer's tokens)
///   audit_atom, stream, agreed -> the audit's outcome, to the fidelity controller
/// Sends:
///   encoded_frame to `next`;
///   (done_atom, seq, frame_outcome::lost) to a frame's source on error, and
///   for the stream's later sparse frames until a full one arrives.

#include <atomic>
#include <caf/behavior.hpp>
#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <map>
#include <optional>
#include <set>

#include "actors/audit_messages.hpp"
#include "actors/frame_messages.hpp"
#include "actors/delivery_actor.hpp"
#include "actors/remote_encoder.hpp"
#include "core/cache/fidelity_controller.hpp"
#include "core/cache/shadow_check.hpp"
#include "core/models/vision_encoder.hpp"

namespace vlcache::actors {

struct encoder_settings {
  int batch_tokens = 256;
  std::chrono::microseconds batch_timeout{20000};
  shadow_config shadow;  ///< online fidelity checks (in-process encoder only)
  /// The fidelity target's controller (core/cache/fidelity_controller): each
  /// stream's layer tolerance moves along its ladder on what the checks
  /// measure. Unset: the encoder's own tolerance for every stream.
  std::optional<controller_config> controller;
  std::chrono::seconds remote_timeout{30};  ///< a remote node's reply to one batch
  /// Set when the pipeline stops: a batch waiting on a remote node fails at
  /// once (counted), and no node is reached again, whatever the node does.
  std::shared_ptr<const std::atomic<bool>> stopping;
};

/// A stream's online fidelity checks.
struct shadow_counters {
  std::uint64_t checks = 0, refreshes = 0;
  double cosine_mean_sum = 0;  ///< over the checks: their mean cosines summed
  double cosine_min = 1.0;     ///< the worst token of any check
  double last_mean = 1.0;
  [[nodiscard]] double cosine_mean() const noexcept { return checks ? cosine_mean_sum / checks : 1.0; }
};

/// One remote encoder node's share of the work, for the summary and /metrics.
struct node_counters {
  std::string address;  ///< HOST:PORT
  std::uint64_t frames = 0, batches = 0, failures = 0, reconnects = 0;
  std::uint64_t streams = 0;  ///< streams it holds now
  double busy_seconds = 0;    ///< time its batches took, reply included
  bool up = true;
};

/// A remote node as the encoder sees it.
struct node_link {
  encoder_node_actor actor;
  std::string host;
  std::uint16_t port = 0;
  bool down = false;                  ///< its last batch failed: reach it again before the next
  bool reaching = false;              ///< an attempt to reach it is under way
  steady::time_point next_reconnect;  ///< the next attempt while it is away
  std::chrono::milliseconds backoff{1000};  ///< 1 s, doubled per failed attempt up to 8 s
  node_counters counters;
};

struct encoder_state {
  /// The model in this process: the encoder, or with nodes the fallback
  /// for streams no node can take (null: no fallback).
  std::shared_ptr<vision_encoder> encoder;
  std::vector<node_link> nodes;             ///< remote_encoder_nodes on other machines
  node_counters fallback{"local"};          ///< frames encoded here while no node could take them
  bool remote_tls = false;
  /// Each stream's token store lives on one node: its home, kept until the
  /// node fails or the streams are rebalanced (the stream's next frame then
  /// runs in full on its new home). `local_home`: the fallback holds it.
  std::map<stream_id, std::size_t> home;
  static constexpr std::size_t local_home = static_cast<std::size_t>(-1);
  std::set<stream_id> full_next;  ///< moved streams: their next frame runs in full
  std::uint64_t reconnects = 0, remote_failures = 0;
  int num_patches = 0, pixels_per_frame = 0;
  encoder_settings settings;
  delivery_actor next;
  std::vector<frame_job> pending;
  std::set<stream_id> lost;  ///< streams whose tokens were lost to a failed batch
  int pending_tokens = 0;
  std::uint64_t batch_id = 0;
  std::uint64_t batches = 0, frames = 0, tokens = 0;
  std::uint64_t layer_tokens = 0;  ///< patch tokens recomputed, summed over the layers
  double busy_seconds = 0;  ///< time spent encoding: the stage's standalone cost
  double shadow_seconds = 0;  ///< time spent on fidelity checks (not in busy_seconds)
  double audit_seconds = 0;   ///< time spent on answer audits' full forwards (not in busy_seconds)
  std::uint64_t audit_forwards = 0, audit_refusals = 0;  ///< full forwards for answer audits; refused
  std::map<stream_id, std::uint64_t> stream_frames;  ///< frames encoded per stream
  std::map<stream_id, std::uint64_t> since_check;    ///< frames since each stream's last check
  std::map<stream_id, shadow_counters> shadow;
  std::optional<fidelity_controller> controller;
  std::map<stream_id, tensor_handle> last_features;  ///< with a controller: each stream's latest tokens
  std::map<stream_id, std::pair<std::uint64_t, std::uint64_t>> per_stream;  ///< frames, tokens computed
  static inline const char* name = "encoder";
};

struct encoder_counters {
  std::uint64_t batches = 0, frames = 0, tokens = 0;
  double busy_seconds = 0;
  int tokens_per_frame = 0;
  std::map<stream_id, std::pair<std::uint64_t, std::uint64_t>> per_stream;  ///< frames, tokens computed
  std::map<stream_id, std::uint64_t> store_bytes;  ///< token store per stream (in-process encoder only)
  std::uint64_t layer_tokens = 0;  ///< patch tokens recomputed, summed over the layers
  int layers = 0;                  ///< layers run (in-process encoder only; 0 = unknown)
  /// The store budget (in-process encoder only): per stream, times its state
  /// was given up for room and frames that then ran in full; all stores'
  /// bytes and the capacity (0 = unbounded).
  std::map<stream_id, std::pair<std::uint64_t, std::uint64_t>> evictions;
  std::uint64_t store_total = 0, store_peak = 0, store_capacity = 0;
  std::map<stream_id, shadow_counters> shadow;  ///< online fidelity checks per stream
  /// Per stream: where the fidelity controller holds it (empty without one).
  std::map<stream_id, controller_report> control;
  double shadow_seconds = 0, audit_seconds = 0;
  std::uint64_t audit_forwards = 0, audit_refusals = 0;
  std::uint64_t remote_failures = 0, reconnects = 0;  ///< remote nodes' failed batches, reconnections
  std::vector<node_counters> nodes;  ///< per remote node, then "local" when there is a fallback

  /// The share of patch tokens computed (the rest came from the cache; the
  /// hit rate is 1 minus it): `tokens` computed over `frames` frames. The
  /// one place the summary, the progress line, /metrics and the live view
  /// take it from.
  [[nodiscard]] double share(std::uint64_t of_frames, std::uint64_t computed) const noexcept {
    return of_frames > 0 && tokens_per_frame > 0
               ? static_cast<double>(computed) / (static_cast<double>(of_frames) * tokens_per_frame)
               : 0.0;
  }
  [[nodiscard]] double share() const noexcept { return share(frames, tokens); }
  [[nodiscard]] double share(stream_id stream) const {
    auto it = per_stream.find(stream);
    return it == per_stream.end() ? 0.0 : share(it->second.first, it->second.second);
  }
  /// 1 - share, and 0 before any frame.
  [[nodiscard]] double hit_rate(stream_id stream) const {
    auto it = per_stream.find(stream);
    return it == per_stream.end() || it->second.first == 0 ? 0.0 : 1.0 - share(stream);
  }
  /// Layer-wise recompute: the tokens recomputed over every layer's tokens;
  /// negative when the layers are unknown (a remote encoder).
  [[nodiscard]] double layer_share() const noexcept {
    return layers > 0 && frames > 0 ? static_cast<double>(layer_tokens) /
                                          (static_cast<double>(frames) * tokens_per_frame * layers)
                                    : -1.0;
  }
};

/// The model runs in-process (`local`), or on remote nodes (with the grid
/// they reported: `num_patches`, `image_size`).
struct remote_node {
  encoder_node_actor actor;
  std::string host;  ///< where it listens: reached again after a failure
  std::uint16_t port = 0;
};

struct encoder_backend {
  std::shared_ptr<vision_encoder> local;  ///< with nodes: the fallback
  std::vector<remote_node> nodes;  ///< streams are spread over them (a null actor: not reached yet)
  bool remote_tls = false;  ///< reach the nodes over TLS (caf::openssl; the system loaded its manager)
  int num_patches = 0;
  int image_size = 0;
};

/// What the probe asks of the encoder: its counters.
using encoder_stats_actor = caf::typed_actor<caf::replies_to<stats_atom>::with<encoder_counters>>;
using encoder_actor =
    encoder_stats_actor::extend<caf::reacts_to<frame_job>, caf::reacts_to<flush_atom, std::uint64_t>,
                                caf::reacts_to<view_change>, caf::reacts_to<end_stream_atom, stream_id>>::
        extend_with<auditor_actor>;

/// Spawn detached: `system.spawn<caf::detached>(encoder, ...)`.
encoder_actor::behavior_type encoder(encoder_actor::stateful_pointer<encoder_state> self,
                                           encoder_backend backend, encoder_settings settings, delivery_actor next);

}  // namespace vlcache::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(vlcache::actors::encoder_counters)
