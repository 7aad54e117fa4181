#include "engine/model/kv_cache.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"

namespace specd {

KvCache::KvCache(const ModelConfig& config, int32_t slots, int64_t max_seq_len, int32_t, int32_t)
    : max_seq_len_(max_seq_len), lengths_(slots > 0 ? slots : 0, 0) {
  if (slots <= 0 || max_seq_len <= 0) {
    throw SpecdError(ErrorCode::invalid_argument, "KV cache needs slots > 0 and max_seq_len > 0");
  }
  auto options = at::TensorOptions().dtype(at::kFloat);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    keys_.push_back(at::zeros({slots, config.num_key_value_heads, max_seq_len, config.head_dim}, options));
    values_.push_back(at::zeros_like(keys_.back()));
  }
}

int64_t KvCache::bytes_per_token(const ModelConfig& c) {
  return 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 2;
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const auto& k : keys_) total += k.numel() * static_cast<int64_t>(k.element_size());
  return total * 2;
}

void KvCache::set_length(int32_t slot, int64_t length) {
  if (length < 0 || length > max_seq_len_) {
    throw SpecdError(ErrorCode::out_of_capacity,
                     "KV length " + std::to_string(length) + " outside [0, " + std::to_string(max_seq_len_) + "]");
  }
  lengths_.at(slot) = length;
}

void KvCache::truncate_to(int32_t slot, int64_t length) {
  if (length > lengths_.at(slot)) {
    throw SpecdError(ErrorCode::invalid_argument, "truncate_to beyond the written length");
  }
  lengths_[slot] = length;
}

}  // namespace specd
