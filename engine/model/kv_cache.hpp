#pragma once
// One model's paged KV cache on one thread: the bookkeeping (KvLedger) and the storage
// (KvBlockPool, BF16) together. The forward makes the ledger's block copies before it
// writes (ForwardRunner::run). Used where one thread owns a model and its cache (tests,
// perplexity, calibration, the benches); the engine's rounds keep the two apart: the
// ledger on the CacheManager, the storage on the lane.
#include <cstdint>

#include "engine/model/kv_block_pool.hpp"
#include "engine/model/kv_ledger.hpp"

namespace specd {

struct ModelConfig;

class KvCache : public KvLedger {
 public:
  // As KvLedger's, with the pool's shape from the model's config.
  KvCache(const ModelConfig& config, int32_t slots, int64_t max_seq_len, int32_t blocks,
          int32_t block_size = kDefaultBlockSize);

  // K and V of all layers in BF16.
  static int64_t bytes_per_token(const ModelConfig& config);

  int64_t bytes() const { return pool_.bytes(); }  // the pool's reservation
  KvLedger& ledger() { return *this; }
  KvBlockPool& pool() { return pool_; }
  const KvBlockPool& pool() const { return pool_; }
  // Makes the copies the ledger's changes imply (KvLedger::take_copies).
  void make_copies();

 private:
  KvBlockPool pool_;
};

}  // namespace specd
