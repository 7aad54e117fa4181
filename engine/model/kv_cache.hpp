#pragma once
// One model's paged KV cache on one thread: the bookkeeping (KvLedger) and the storage
// (KvBlockPool, BF16) together. The forward makes the ledger's block copies before it
// writes (ForwardRunner::run). Used where one thread owns a model and its cache (tests,
// perplexity, calibration, the benches); the engine's rounds keep the two apart: the
// ledger on the CacheManager, the storage on the lane.
#include <cstdint>
#include <memory>

#include "engine/model/kv_block_pool.hpp"
#include "engine/model/kv_ledger.hpp"

namespace specd {

struct ModelConfig;

class KvCache : public KvLedger {
 public:
  // As KvLedger's, with a pool of the model's shape.
  KvCache(const ModelConfig& config, int32_t slots, int64_t max_seq_len, int32_t blocks,
          int32_t block_size = kDefaultBlockSize);
  // A ledger of its own over existing storage (start-up calibration on a lane, before the
  // engine's ledger hands out any block of it).
  KvCache(std::shared_ptr<KvBlockPool> storage, int32_t slots, int64_t max_seq_len);

  // K and V of all layers in BF16.
  static int64_t bytes_per_token(const ModelConfig& config);
  // A pool of the model's shape (the engine's storage for one model).
  static std::shared_ptr<KvBlockPool> make_storage(const ModelConfig& config, int32_t blocks, int32_t block_size);

  int64_t bytes() const { return pool_->bytes(); }  // the pool's reservation
  KvBlockPool& pool() { return *pool_; }
  const KvBlockPool& pool() const { return *pool_; }
  const std::shared_ptr<KvBlockPool>& storage() const { return pool_; }

 private:
  std::shared_ptr<KvBlockPool> pool_;
};

}  // namespace specd
