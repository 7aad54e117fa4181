#pragma once
// Which slots of a fixed-size pool are in use: the bookkeeping half of a KV cache,
// kept apart from the tensors so that an allocator (the actors' CacheManager) can own
// it on its strand while the compute lanes own the tensors. Not thread-safe.
#include <cstdint>
#include <optional>
#include <vector>

namespace specd {

class SlotPool {
 public:
  explicit SlotPool(int32_t slots);

  int32_t size() const { return static_cast<int32_t>(in_use_.size()); }
  int32_t free_count() const { return static_cast<int32_t>(free_.size()); }
  int32_t in_use_count() const { return size() - free_count(); }
  bool in_use(int32_t slot) const { return slot >= 0 && slot < size() && in_use_[slot] != 0; }

  // The lowest free slot, or nullopt when every slot is taken.
  std::optional<int32_t> allocate();
  // Throws SpecdError(invalid_argument) for a slot that is not in use.
  void release(int32_t slot);

 private:
  std::vector<int32_t> free_;    // a stack, lowest slot on top
  std::vector<uint8_t> in_use_;  // bytes, not vector<bool>: no shared words between slots
};

}  // namespace specd
