#include "engine/model/slot_pool.hpp"

#include <string>

#include "engine/base/errors.hpp"

namespace specd {

SlotPool::SlotPool(int32_t slots) : in_use_(slots > 0 ? slots : 0, 0) {
  if (slots <= 0) throw SpecdError(ErrorCode::invalid_argument, "a slot pool needs at least one slot");
  // Hand out low slot numbers first, so a lone request always uses slot 0.
  for (int32_t slot = slots - 1; slot >= 0; --slot) free_.push_back(slot);
}

std::optional<int32_t> SlotPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t slot = free_.back();
  free_.pop_back();
  in_use_[slot] = 1;
  return slot;
}

void SlotPool::release(int32_t slot) {
  if (!in_use(slot)) {
    throw SpecdError(ErrorCode::invalid_argument, "release of a slot not in use: " + std::to_string(slot));
  }
  in_use_[slot] = 0;
  free_.push_back(slot);
}

}  // namespace specd
