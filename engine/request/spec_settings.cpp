#include "engine/request/spec_settings.hpp"

#include <cstddef>

namespace specd {

const char* drafter_name(DrafterKind kind) { return kind == DrafterKind::model ? "model" : "lookup"; }

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
