#pragma once
// Preallocated per-slot KV cache for one model: per layer, K and V tensors of shape
// [slots, kv_heads, max_seq_len, head_dim]. Storage only: which request holds a slot is
// decided elsewhere (the engine's CacheManager is the one allocator); a slot's length
// is the number of positions written. Truncation only lowers the length (stale entries
// are overwritten by the next write). Not thread-safe: one owner (a lane) drives it.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <span>
#include <vector>

namespace specd {

struct ModelConfig;

class KvCache {
 public:
  static constexpr int32_t kDefaultBlockSize = 16;
  // TEMPORARY until the paged cache lands: blocks and block_size are ignored.
  KvCache(const ModelConfig& config, int32_t slots, int64_t max_seq_len, int32_t blocks = 1,
          int32_t block_size = kDefaultBlockSize);
  static int64_t bytes_per_token(const ModelConfig& config);
  void release(int32_t slot) { lengths_.at(slot) = 0; }
  int64_t map_prefix(int32_t, std::span<const int32_t>) { return 0; }
  void commit(int32_t, std::span<const int32_t>) {}
  void set_prefix_caching(bool) {}

  int32_t slot_count() const { return static_cast<int32_t>(lengths_.size()); }
  int64_t max_seq_len() const { return max_seq_len_; }
  // Bytes held by the K and V tensors of all layers.
  int64_t bytes() const;

  int64_t length(int32_t slot) const { return lengths_.at(slot); }
  // Sets the valid length (rollback after rejected speculative tokens, or advance after a write).
  void set_length(int32_t slot, int64_t length);
  void truncate_to(int32_t slot, int64_t length);

  at::Tensor& keys(int32_t layer) { return keys_[layer]; }
  at::Tensor& values(int32_t layer) { return values_[layer]; }

 private:
  int64_t max_seq_len_;
  std::vector<at::Tensor> keys_;
  std::vector<at::Tensor> values_;
  std::vector<int64_t> lengths_;
};

}  // namespace specd
