#include "engine/spec_settings.hpp"

namespace specd {

const char* drafter_name(DrafterKind kind) { return kind == DrafterKind::model ? "model" : "lookup"; }

void SpecStats::record(int32_t drafted_now, int32_t accepted_now) {
  rounds += 1;
  drafted += drafted_now;
  accepted += accepted_now;
  emitted += accepted_now + 1;
  if (accepted_now < drafted_now) rejections += 1;
  if (static_cast<int32_t>(accepted_per_position.size()) < drafted_now) accepted_per_position.resize(drafted_now, 0);
  for (int32_t i = 0; i < accepted_now; ++i) accepted_per_position[i] += 1;
}

}  // namespace specd
