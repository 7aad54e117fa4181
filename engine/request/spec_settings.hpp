#pragma once
// Per-request speculation settings and statistics: plain values, torch-free, shared by
// the engine, the actors' public API and the network layer.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

enum class DrafterKind { model, lookup };
const char* drafter_name(DrafterKind kind);

// Token trees (seed 004): off (a chain of K drafts), auto (the planner chooses each
// round whether a tree pays and how large, from measured costs), or a fixed shape:
// widths[d] children under every node of depth d (the root g is depth 0).
enum class TreeMode { off, automatic, fixed };
struct TreeSettings {
  static constexpr int32_t kMaxNodes = 64;  // verify rows a fixed shape may add
  TreeMode mode = TreeMode::off;
  std::vector<int32_t> widths;
  friend bool operator==(const TreeSettings&, const TreeSettings&) = default;
};
// "off", "auto" or "W1,W2,..." (each 1..16, at most kMaxNodes nodes); nothing otherwise,
// with the reason in `error`.
std::optional<TreeSettings> parse_tree_settings(std::string_view text, std::string& error);
std::string tree_settings_name(const TreeSettings& tree);
// Nodes of a fixed shape (the product sums of its widths).
int64_t tree_nodes(std::span<const int32_t> widths);

// Per-request speculation settings.
struct SpecSettings {
  bool enabled = true;
  int32_t k = 4;          // drafted tokens per round when not adaptive
  bool adaptive = false;  // `k = auto`: K from the running acceptance and the cost ratio
  int32_t k_max = 0;      // bound for adaptive K; 0: the engine's k_max
  DrafterKind drafter = DrafterKind::model;
  int32_t lookup_max_ngram = 3;
  TreeSettings tree;
};

// Per-request statistics (the figures vLLM and llama.cpp report).
struct SpecStats {
  int64_t rounds = 0;  // rounds in which this request drafted at least one token
  int64_t drafted = 0;
  int64_t accepted = 0;
  int64_t emitted = 0;                         // tokens produced by those rounds (accepted + correction/bonus)
  int64_t rejections = 0;                      // rounds that ended on a rejected draft token (the rest accepted all)
  std::vector<int64_t> accepted_per_position;  // [i]: rounds whose draft token i+1 was accepted

  // Accepted over drafted, as vLLM reports it (drafts after a rejection count as not accepted).
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  // The per-token acceptance probability a of the speedup formula (Leviathan et al.'s
  // alpha): accepted over the draft tokens the target actually judged (accepted plus
  // the one rejected per round); the maximum-likelihood estimate for truncated rounds.
  double alpha() const {
    return accepted + rejections ? static_cast<double>(accepted) / static_cast<double>(accepted + rejections) : 0.0;
  }
  double tokens_per_round() const { return rounds ? static_cast<double>(emitted) / rounds : 0.0; }
  // One drafting round that emitted the accepted drafts and the correction or bonus token.
  void record(int32_t drafted_now, int32_t accepted_now) { record(drafted_now, accepted_now, accepted_now + 1); }
  // A round as far as it was kept: a stop condition may cut it inside its accepted drafts.
  void record(int32_t drafted_now, int32_t accepted_now, int32_t emitted_now);
  // Sums another request's statistics into these (aggregates over requests).
  void add(const SpecStats& other);
};

}  // namespace specd
