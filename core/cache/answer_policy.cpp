#include "core/cache/answer_policy.hpp"

namespace vlcache {

status answer_policy_config::validate() const {
  if (every_n_frames < 0) return error{errc::invalid_config, "every_n_frames must be >= 0"};
  if (change_threshold < 0.0 || change_threshold > 1.0)
    return error{errc::invalid_config, "change_threshold must be within [0, 1]"};
  return {};
}

bool answer_policy::due(stream_id stream, double changed_share) {
  auto it = since_.find(stream);
  const bool first = it == since_.end();
  std::uint64_t& since = since_[stream];
  ++since;
  const bool yes = (first && c_.first_frame) ||
                   (c_.every_n_frames > 0 && since >= static_cast<std::uint64_t>(c_.every_n_frames)) ||
                   (c_.change_threshold > 0.0 && changed_share >= c_.change_threshold);
  if (yes) since = 0;
  return yes;
}

}  // namespace vlcache
