#pragma once
/// \file
/// Moves the entry of `from` in a map to key `to` (whose own entry is
/// dropped), without copying the value: how each holder of per-stream state
/// renames a stream (core/cache/view_memory).

#include <utility>

namespace vlcache::detail {

template <class Map, class Key>
void rename_key(Map& map, const Key& from, const Key& to) {
  auto node = map.extract(from);
  map.erase(to);
  if (node.empty()) return;
  node.key() = to;
  map.insert(std::move(node));
}

}  // namespace vlcache::detail
