#pragma once
// The storage of one model's paged KV cache: per layer, a pool of key blocks and a pool
// of value blocks, each block holding `block_size` positions of every KV head in BF16
// (F32 rounded to nearest even). The layout is the one the attention kernels read
// (kernels::PagedKv): per block and KV head, keys [head_dim][block_size], values
// [block_size][head_dim]. The address space is reserved up front without committing
// memory (MAP_NORESERVE), so a large pool costs only the blocks ever written. Which block
// belongs to whom is KvCache's business. One owner thread writes; readers of distinct
// blocks (the kernel threads of a forward) may run at once.
#include <cstddef>
#include <cstdint>

#include "engine/kernels/attention.hpp"

namespace specd {

class KvBlockPool {
 public:
  // Throws SpecdError(invalid_argument) for non-positive sizes, out_of_capacity when the
  // address space cannot be reserved.
  KvBlockPool(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t blocks, int32_t block_size);
  ~KvBlockPool();
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  int32_t layers() const { return layers_; }
  int32_t blocks() const { return blocks_; }
  int32_t block_size() const { return block_size_; }
  // Elements (BF16) of one block of one layer's keys (or values): all KV heads.
  int64_t block_elements() const { return static_cast<int64_t>(kv_heads_) * block_size_ * head_dim_; }
  int64_t bytes() const { return static_cast<int64_t>(bytes_); }  // reserved, not resident

  // Writes one position's keys and values, each kv_heads x head_dim floats, as BF16 at
  // `offset` (< block_size) of `block`.
  void write(int32_t layer, int32_t block, int32_t offset, const float* keys, const float* values);
  // Copies every layer's keys and values of block `from` into block `to`.
  void copy_block(int32_t from, int32_t to);

  // KV head `kv_head` of `layer` for a sequence whose block table is `table`.
  kernels::PagedKv head(int32_t layer, int32_t kv_head, const int32_t* table) const;

 private:
  uint16_t* keys(int32_t layer) const { return base_ + (2 * static_cast<int64_t>(layer)) * blocks_ * block_elements(); }
  uint16_t* values(int32_t layer) const { return keys(layer) + static_cast<int64_t>(blocks_) * block_elements(); }

  int32_t layers_, kv_heads_, head_dim_, blocks_, block_size_;
  size_t bytes_ = 0;
  uint16_t* base_ = nullptr;
};

}  // namespace specd
