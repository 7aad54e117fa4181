#include "engine/model/kv_cache.hpp"

#include "engine/checkpoint/model_config.hpp"

namespace specd {

KvCache::KvCache(const ModelConfig& config, int32_t slots, int64_t max_seq_len, int32_t blocks, int32_t block_size)
    : KvLedger(slots, max_seq_len, blocks, block_size), pool_(make_storage(config, blocks, block_size)) {}

KvCache::KvCache(std::shared_ptr<KvBlockPool> storage, int32_t slots, int64_t max_seq_len)
    : KvLedger(slots, max_seq_len, storage->blocks(), storage->block_size()), pool_(std::move(storage)) {}

int64_t KvCache::bytes_per_token(const ModelConfig& config) {
  return 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * int64_t{2};
}

std::shared_ptr<KvBlockPool> KvCache::make_storage(const ModelConfig& config, int32_t blocks, int32_t block_size) {
  return std::make_shared<KvBlockPool>(static_cast<int32_t>(config.num_hidden_layers),
                                       static_cast<int32_t>(config.num_key_value_heads),
                                       static_cast<int32_t>(config.head_dim), blocks, block_size);
}

}  // namespace specd
