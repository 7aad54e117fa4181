#include "engine/model/kv_block_pool.hpp"

#include <sys/mman.h>

#include <cstring>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/kernels/packed_weight.hpp"

namespace specd {

KvBlockPool::KvBlockPool(int32_t layers, int32_t kv_heads, int32_t head_dim, int32_t blocks, int32_t block_size)
    : layers_(layers), kv_heads_(kv_heads), head_dim_(head_dim), blocks_(blocks), block_size_(block_size) {
  if (layers <= 0 || kv_heads <= 0 || head_dim <= 0 || blocks <= 0 || block_size <= 0) {
    throw SpecdError(ErrorCode::invalid_argument, "a KV block pool needs positive layers, heads, head_dim and blocks");
  }
  bytes_ = static_cast<size_t>(2 * static_cast<int64_t>(layers) * blocks * block_elements()) * sizeof(uint16_t);
  // Anonymous pages read as zero and take memory only when first written.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw SpecdError(ErrorCode::out_of_capacity,
                     "cannot reserve " + std::to_string(bytes_) + " bytes of address space for the KV cache");
  }
  base_ = static_cast<uint16_t*>(p);
}

KvBlockPool::~KvBlockPool() { munmap(base_, bytes_); }

void KvBlockPool::write(int32_t layer, int32_t block, int32_t offset, const float* keys_in, const float* values_in) {
  const int64_t head = static_cast<int64_t>(block_size_) * head_dim_;
  uint16_t* k = keys(layer) + block * block_elements();
  uint16_t* v = values(layer) + block * block_elements();
  for (int32_t h = 0; h < kv_heads_; ++h) {
    const float* kh = keys_in + static_cast<int64_t>(h) * head_dim_;
    const float* vh = values_in + static_cast<int64_t>(h) * head_dim_;
    uint16_t* kb = k + h * head + offset;                       // column `offset` of [head_dim][block_size]
    uint16_t* vb = v + h * head + offset * int64_t{head_dim_};  // row `offset` of [block_size][head_dim]
    for (int32_t i = 0; i < head_dim_; ++i) {
      kb[static_cast<int64_t>(i) * block_size_] = kernels::float_to_bf16(kh[i]);
      vb[i] = kernels::float_to_bf16(vh[i]);
    }
  }
}

void KvBlockPool::copy_block(int32_t from, int32_t to) {
  const size_t n = static_cast<size_t>(block_elements()) * sizeof(uint16_t);
  for (int32_t layer = 0; layer < layers_; ++layer) {
    std::memcpy(keys(layer) + to * block_elements(), keys(layer) + from * block_elements(), n);
    std::memcpy(values(layer) + to * block_elements(), values(layer) + from * block_elements(), n);
  }
}

kernels::PagedKv KvBlockPool::head(int32_t layer, int32_t kv_head, const int32_t* table) const {
  kernels::PagedKv kv;
  kv.keys = keys(layer);
  kv.values = values(layer);
  kv.block_stride = block_elements();
  kv.head_offset = static_cast<int64_t>(kv_head) * block_size_ * head_dim_;
  kv.blocks = table;
  kv.block_size = block_size_;
  kv.head_dim = head_dim_;
  return kv;
}

}  // namespace specd
