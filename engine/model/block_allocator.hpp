#pragma once
// BlockAllocator: the bookkeeping of one model's KV blocks, kept apart from their storage
// (KvLedger builds slots and branches on it; the engine's CacheManager owns both models'
// ledgers). A free list, a reference count per block, and for each full block of
// committed tokens a key over (the parent block's key, its token ids), so that equal
// prefixes find equal blocks (vLLM's block pool, SGLang's radix cache). A block that
// nobody references but that holds a keyed prefix stays cached, in least-recently-released
// order, until a new block is needed. Prefix hits are decided by map_prefixes
// (engine/speculation/pass_layout.cpp) and counted once, by the scheduler, from what it
// reports. Not thread-safe.
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace specd {

// A chain key: 128 bits from two independent 64-bit hashes, so that two different
// prefixes share a key with probability about 2^-64 even among billions of blocks; a hit
// also compares the block's own token ids.
struct BlockKey {
  uint64_t a = 0, b = 0;
  friend bool operator==(const BlockKey&, const BlockKey&) = default;
};

// The key of a full block whose tokens follow the prefix keyed `parent` (BlockKey{} for
// the first block of a sequence).
BlockKey chain_key(const BlockKey& parent, std::span<const int32_t> tokens);

// The cached blocks a new sequence maps instead of computing them.
struct PrefixHit {
  std::vector<int32_t> blocks;  // each referenced once for the caller
  int64_t tokens = 0;           // blocks.size() * block_size
  BlockKey key;                 // of the last block (BlockKey{} when none)
};

class BlockAllocator {
 public:
  // Throws SpecdError(invalid_argument) unless blocks >= 1 and block_size >= 1.
  BlockAllocator(int32_t blocks, int32_t block_size);

  int32_t block_size() const { return block_size_; }
  int32_t total() const { return static_cast<int32_t>(refs_.size()); }
  // Blocks a request can get now: free ones and cached ones nobody references.
  int32_t available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t referenced() const { return total() - available(); }
  int32_t ref_count(int32_t block) const { return refs_.at(block); }

  // The longest chain of cached full blocks that starts `tokens`, always leaving at
  // least one token to compute (a sequence needs the logits of its last prompt token),
  // so the caller never writes into a shared block.
  PrefixHit match(std::span<const int32_t> tokens);
  // `n` fresh blocks, each referenced once, evicting the least recently released cached
  // blocks as needed; nothing (and nothing taken) when fewer than `n` are available.
  std::optional<std::vector<int32_t>> allocate(int32_t n);
  // `block`, referenced and now full of committed tokens that follow the prefix keyed
  // `parent`, becomes findable by later sequences; returns its key (the next block's
  // parent). When an equal block is cached already, that one stays the one found and
  // this one is freed at its last release.
  BlockKey commit(int32_t block, const BlockKey& parent, std::span<const int32_t> tokens);
  // One reference more to a referenced block (a KV branch shares its parent's blocks).
  // Throws SpecdError(invalid_argument) for a block nobody references.
  void share(int32_t block);
  // One reference less: at zero a keyed block joins the cache, any other is freed.
  // Release a sequence's blocks from its last to its first, so that a prefix's head
  // outlives its tail in the cache. Throws SpecdError(invalid_argument) for a block
  // nobody references.
  void release(int32_t block);
  void release_all(std::span<const int32_t> blocks);

 private:
  struct KeyHash {
    size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.a ^ (k.b * 0x9E3779B97F4A7C15ULL)); }
  };
  struct Cached {
    BlockKey key;
    std::vector<int32_t> tokens;
  };
  void take_cached(int32_t block);
  void forget(int32_t block);

  int32_t block_size_;
  std::vector<int32_t> refs_;
  std::vector<std::optional<Cached>> cached_;  // per block: its key and tokens when findable
  std::unordered_map<BlockKey, int32_t, KeyHash> by_key_;
  std::vector<int32_t> free_;  // a stack
  std::list<int32_t> lru_;     // unreferenced cached blocks, oldest first
  std::vector<std::list<int32_t>::iterator> in_lru_;
};

}  // namespace specd
