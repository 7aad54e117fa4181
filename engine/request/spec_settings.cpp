#include "engine/request/spec_settings.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>

namespace specd {

const char* drafter_name(DrafterKind kind) { return kind == DrafterKind::model ? "model" : "lookup"; }

int64_t tree_nodes(std::span<const int32_t> widths) {
  int64_t level = 1, nodes = 0;
  for (int32_t w : widths) {
    level *= w;
    nodes += level;
  }
  return nodes;
}

std::optional<TreeSettings> parse_tree_settings(std::string_view text, std::string& error) {
  TreeSettings tree;
  if (text == "off") return tree;
  if (text == "auto") {
    tree.mode = TreeMode::automatic;
    return tree;
  }
  tree.mode = TreeMode::fixed;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view part = text.substr(at, comma - at);
    int32_t width = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), width);
    if (part.empty() || ec != std::errc{} || end != part.data() + part.size() || width < 1 || width > 16) {
      error = "tree must be off, auto or children per depth like 2,2,1 (each 1..16); got \"" + std::string(text) + "\"";
      return std::nullopt;
    }
    tree.widths.push_back(width);
    if (tree_nodes(tree.widths) > TreeSettings::kMaxNodes) {
      error = "tree " + std::string(text) + " has more than " + std::to_string(TreeSettings::kMaxNodes) + " nodes";
      return std::nullopt;
    }
    at = comma + 1;
  }
  return tree;
}

std::string tree_settings_name(const TreeSettings& tree) {
  if (tree.mode == TreeMode::off) return "off";
  if (tree.mode == TreeMode::automatic) return "auto";
  std::string out;
  for (int32_t w : tree.widths) out += (out.empty() ? "" : ",") + std::to_string(w);
  return out;
}

void SpecStats::record(int32_t drafted_now, int32_t accepted_now, int32_t emitted_now) {
  rounds += 1;
  drafted += drafted_now;
  accepted += accepted_now;
  emitted += emitted_now;
  if (accepted_now < drafted_now) rejections += 1;
  if (static_cast<int32_t>(accepted_per_position.size()) < drafted_now) accepted_per_position.resize(drafted_now, 0);
  for (int32_t i = 0; i < accepted_now; ++i) accepted_per_position[i] += 1;
}

void SpecStats::add(const SpecStats& other) {
  rounds += other.rounds;
  drafted += other.drafted;
  accepted += other.accepted;
  emitted += other.emitted;
  rejections += other.rejections;
  if (accepted_per_position.size() < other.accepted_per_position.size()) {
    accepted_per_position.resize(other.accepted_per_position.size(), 0);
  }
  for (std::size_t i = 0; i < other.accepted_per_position.size(); ++i)
    accepted_per_position[i] += other.accepted_per_position[i];
}

}  // namespace specd
