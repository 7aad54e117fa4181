#include "engine/model/block_allocator.hpp"

#include <algorithm>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

// splitmix64's finaliser: a strong 64-bit mix.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

BlockKey chain_key(const BlockKey& parent, std::span<const int32_t> tokens) {
  // Two hashes with different seeds and combining rules, so a collision needs both.
  uint64_t a = mix(parent.a ^ 0x5851F42D4C957F2DULL);
  uint64_t b = mix(parent.b + 0x14057B7EF767814FULL);
  for (int32_t t : tokens) {
    const auto v = static_cast<uint64_t>(static_cast<uint32_t>(t));
    a = mix(a ^ v);
    b = (b ^ mix(v + 0xD1B54A32D192ED03ULL)) * 0x100000001B3ULL;
  }
  return {a, mix(b ^ tokens.size())};
}

BlockAllocator::BlockAllocator(int32_t blocks, int32_t block_size) : block_size_(block_size) {
  if (blocks < 1 || block_size < 1)
    throw SpecdError(ErrorCode::invalid_argument, "a block allocator needs >= 1 block of >= 1 token");
  refs_.assign(blocks, 0);
  cached_.resize(blocks);
  in_lru_.assign(blocks, lru_.end());
  free_.reserve(blocks);
  for (int32_t b = blocks - 1; b >= 0; --b) free_.push_back(b);  // lowest on top
}

void BlockAllocator::take_cached(int32_t block) {
  if (refs_[block]++ == 0 && in_lru_[block] != lru_.end()) {
    lru_.erase(in_lru_[block]);
    in_lru_[block] = lru_.end();
  }
}

void BlockAllocator::forget(int32_t block) {
  auto& cached = cached_[block];
  if (!cached) return;
  auto it = by_key_.find(cached->key);
  if (it != by_key_.end() && it->second == block) by_key_.erase(it);
  cached.reset();
}

PrefixHit BlockAllocator::match(std::span<const int32_t> tokens) {
  PrefixHit hit;
  const size_t full = tokens.empty() ? 0 : (tokens.size() - 1) / block_size_;
  for (size_t i = 0; i < full; ++i) {
    const auto block_tokens = tokens.subspan(i * block_size_, block_size_);
    const BlockKey key = chain_key(hit.key, block_tokens);
    auto it = by_key_.find(key);
    if (it == by_key_.end() || !std::equal(block_tokens.begin(), block_tokens.end(),
                                           cached_[it->second]->tokens.begin(), cached_[it->second]->tokens.end())) {
      break;
    }
    take_cached(it->second);
    hit.blocks.push_back(it->second);
    hit.key = key;
  }
  hit.tokens = static_cast<int64_t>(hit.blocks.size()) * block_size_;
  return hit;
}

std::optional<std::vector<int32_t>> BlockAllocator::allocate(int32_t n) {
  if (n < 0 || n > available()) return std::nullopt;
  std::vector<int32_t> out;
  out.reserve(n);
  while (static_cast<int32_t>(out.size()) < n) {
    int32_t block;
    if (!free_.empty()) {
      block = free_.back();
      free_.pop_back();
    } else {
      block = lru_.front();  // the least recently released cached block
      lru_.pop_front();
      in_lru_[block] = lru_.end();
      forget(block);
    }
    refs_[block] = 1;
    out.push_back(block);
  }
  return out;
}

BlockKey BlockAllocator::commit(int32_t block, const BlockKey& parent, std::span<const int32_t> tokens) {
  if (refs_.at(block) < 1) throw SpecdError(ErrorCode::invalid_argument, "commit of an unreferenced block");
  if (static_cast<int32_t>(tokens.size()) != block_size_)
    throw SpecdError(ErrorCode::invalid_argument, "only a full block is committed");
  const BlockKey key = chain_key(parent, tokens);
  if (!cached_[block] && by_key_.emplace(key, block).second)
    cached_[block] = Cached{key, std::vector<int32_t>(tokens.begin(), tokens.end())};
  return key;
}

void BlockAllocator::share(int32_t block) {
  if (block < 0 || block >= total() || refs_[block] < 1) {
    throw SpecdError(ErrorCode::invalid_argument, "share of block " + std::to_string(block) + " not referenced");
  }
  ++refs_[block];
}

void BlockAllocator::release(int32_t block) {
  if (block < 0 || block >= total() || refs_[block] < 1) {
    throw SpecdError(ErrorCode::invalid_argument, "release of block " + std::to_string(block) + " not referenced");
  }
  if (--refs_[block] > 0) return;
  if (cached_[block]) {
    in_lru_[block] = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

void BlockAllocator::release_all(std::span<const int32_t> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) release(*it);
}

}  // namespace specd
