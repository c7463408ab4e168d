#pragma once
/// \file
/// The cache part of a pipeline spec: encoder input and patch grid, the
/// reference gate and the byte budget of the token stores, read from TOML and
/// validated as a whole. Keys (all optional; defaults in configs/reference.toml):
///
///   [input]  image_size, patch_size, shortest_edge, pad_to_square
///   [gate]   ahash, dhash, phash (max Hamming bits), mad (max mean abs diff)
///   [index]  capacity_mb, eviction ("value" | "lru" | "lfu" | "decayed_frequency"), half_life, hysteresis:
///            one budget for every stream's token store (absent: unbounded)
///   [views]  keep, cut_share, match_share: view memory (core/cache/view_memory;
///            absent: off)

#include <optional>
#include <string>
#include <string_view>

#include <toml++/toml.h>
#include <vector>

#include "core/base/error.hpp"
#include "core/cache/patch_grid.hpp"
#include "core/base/preprocess.hpp"
#include "core/cache/reference_gate.hpp"
#include "core/cache/store_budget.hpp"
#include "core/cache/view_memory.hpp"

namespace vlcache::graph {

struct cache_spec {
  preprocess_config preprocess;
  patch_grid grid;
  gate_thresholds gate;
  bool gate_by_hand = false;  ///< the spec has a [gate] table: no profile replaces it
  bool input_by_hand = false; ///< the spec has an [input] table: the model's own size is not taken
  std::optional<store_budget_config> index;  ///< set when the spec has an [index] table
  std::optional<view_memory_config> views;   ///< set when the spec has a [views] table
};

/// Every problem found, one per line, each naming its key; empty when valid.
struct spec_result {
  cache_spec spec;
  std::vector<std::string> errors;
  [[nodiscard]] bool ok() const noexcept { return errors.empty(); }
};

[[nodiscard]] spec_result parse_cache_spec(std::string_view toml_text, const std::string& origin);

class table_reader;
/// Reads [input], [gate], [index] and [views] through the root table's reader (for
/// specs that hold more tables than these).
void read_cache_tables(table_reader& root, cache_spec& spec, std::vector<std::string>& errors);
/// TOML text to a table; a syntax error is recorded as "origin:line:col: ...".
[[nodiscard]] std::optional<toml::table> parse_toml(std::string_view text, const std::string& origin,
                                                    std::vector<std::string>& errors);
[[nodiscard]] std::optional<std::string> read_text_file(const std::string& path,
                                                        std::vector<std::string>& errors);
[[nodiscard]] spec_result load_cache_spec(const std::string& path);

/// The default gate: mean absolute difference <= 3 (of 255). On vtest.avi
/// with ViT-B/16 it gave the best fidelity per recomputed token of the gates
/// measured; the hashes mostly add misses on flat, noisy patches.
[[nodiscard]] gate_thresholds default_gate();

/// The gate a pipeline runs when neither its config nor a profile sets one:
/// MAD <= 2 on the means of 4x4-pixel cells, and at least 3x what the
/// camera's own sensor noise gives. On clean footage it costs what the
/// plain gate does once layer-wise recompute keeps the tokens current
/// (docs/fidelity.md); on a noisy camera the plain gate recomputes nearly
/// every patch.
[[nodiscard]] gate_thresholds noise_robust_gate();

}  // namespace vlcache::graph
