#pragma once
// KvLedger: the bookkeeping of one model's paged KV cache, apart from its storage
// (KvBlockPool): the BlockAllocator (free list, reference counts, prefix cache) and per
// slot a block table, a length, the prefix keys of its committed blocks and the tokens
// it was fed. A slot takes blocks as it grows and returns them when cut back or
// released; full blocks of committed tokens can be found again by later sequences with
// the same prefix (map_prefix). Blocks a slot shares with the prefix cache or a branch
// are never written: a write into one goes to a private copy, which the ledger only
// records (take_copies); whoever writes the storage makes the copies first. One owner
// drives it: the engine's CacheManager, or KvCache on a single thread. Not thread-safe.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/block_allocator.hpp"

namespace specd {

// Storage work a ledger change implies: block `to` must first hold what `from` holds.
struct BlockCopy {
  int32_t from = 0, to = 0;
};

class KvLedger {
 public:
  static constexpr int32_t kDefaultBlockSize = 16;

  // slots: sequences held at once; max_seq_len: the most positions one sequence may
  // hold; blocks: the pool size. Throws SpecdError(invalid_argument) for non-positive values.
  KvLedger(int32_t slots, int64_t max_seq_len, int32_t blocks, int32_t block_size = kDefaultBlockSize);

  // Blocks that hold `slots` sequences of max_seq_len each (a pool that never runs out).
  static int32_t blocks_to_hold(int32_t slots, int64_t max_seq_len, int32_t block_size = kDefaultBlockSize);

  int32_t slot_count() const { return slot_count_; }
  int64_t max_seq_len() const { return max_seq_len_; }
  int32_t block_size() const { return allocator_.block_size(); }
  int32_t total_blocks() const { return allocator_.total(); }
  int32_t available_blocks() const { return allocator_.available(); }    // free + cached-unreferenced
  int32_t referenced_blocks() const { return allocator_.referenced(); }  // held by some slot or branch
  // Blocks a sequence of `length` positions covers.
  int32_t blocks_covering(int64_t length) const;

  int64_t length(int32_t slot) const { return at(slot).length; }
  // Grows (taking blocks as needed) or shrinks (same as truncate_to). Growing beyond the
  // pool throws SpecdError(out_of_capacity) with nothing changed; beyond max_seq_len too.
  void set_length(int32_t slot, int64_t length);
  // Makes room for positions [0, length) without changing the length (a forward does
  // this before writing rows). Same errors as set_length.
  void reserve(int32_t slot, int64_t length);
  // Lowers the length and returns the blocks wholly beyond it (a partial last block is
  // kept). Throws SpecdError(invalid_argument) for a length above the current one.
  void truncate_to(int32_t slot, int64_t length);
  // Length 0, every block released (blocks committed to the prefix cache stay cached),
  // nothing fed; a slot's branches are dropped.
  void release(int32_t slot);

  // Branches (token trees): a branch is a slot of its own, numbered from slot_count() up,
  // that starts as a copy of another slot sharing all its blocks (and its fed tokens);
  // the first write into a shared partial block goes to a private copy in either (so
  // siblings at one position never see each other). Every slot operation takes a
  // branch. adopt: `slot` gives back its blocks and takes the branch's table, length,
  // prefix keys and fed tokens; the branch is gone. drop: the branch gives back its
  // blocks and is gone.
  int32_t fork(int32_t slot);
  void adopt(int32_t slot, int32_t branch);
  void drop(int32_t branch);
  // The live branches forked from `slot` or from its branches, lowest first.
  std::vector<int32_t> branches_of(int32_t slot) const;
  int32_t branch_count() const {
    return static_cast<int32_t>(slots_.size()) - slot_count_ - static_cast<int32_t>(free_branches_.size());
  }

  // Prefix cache. map_prefix: the slot must be empty; maps the longest chain of cached
  // full blocks that starts `tokens` (always leaving at least one token uncached), sets
  // the length to the tokens mapped and returns that count (0 when prefix caching is off).
  int64_t map_prefix(int32_t slot, std::span<const int32_t> tokens);
  // `tokens` are the slot's committed tokens from position 0 (tokens.size() <= length):
  // every full block they cover that is not yet committed becomes findable. Idempotent.
  void commit(int32_t slot, std::span<const int32_t> tokens);
  void set_prefix_caching(bool on) { prefix_caching_ = on; }
  bool prefix_caching() const { return prefix_caching_; }

  // The tokens a slot's cache holds, as its owner records them (the draft side, which
  // finds what a slot still holds of a new context by comparing): `fed(slot)` grows with
  // what the owner writes; truncate_to, release, fork and adopt keep it in step.
  std::vector<int32_t>& fed(int32_t slot) { return at(slot).fed; }
  const std::vector<int32_t>& fed(int32_t slot) const { return at(slot).fed; }

  // A slot's blocks: position p is in block_table(slot)[p / block_size()].
  std::span<const int32_t> block_table(int32_t slot) const { return at(slot).blocks; }
  // The copies of shared blocks the changes so far imply, oldest first; the storage
  // makes them in this order before it is written again.
  std::vector<BlockCopy> take_copies();

 private:
  struct Slot {
    std::vector<int32_t> blocks;
    int64_t length = 0;
    // Leading blocks shared with the prefix cache (committed or mapped) or a branch,
    // never written; the last may be only partly valid after a truncation.
    int32_t frozen = 0;
    std::vector<BlockKey> keys;  // chain keys of the leading full committed blocks
    std::vector<int32_t> fed;    // what the owner says the cache holds (KvLedger::fed)
    int32_t owner = -1;          // a branch: the slot it was forked from (through any branches)
    bool live = true;            // false for a branch number not in use
  };
  Slot& branch(int32_t branch);
  const Slot& at(int32_t slot) const;
  Slot& at(int32_t slot) { return const_cast<Slot&>(static_cast<const KvLedger*>(this)->at(slot)); }

  int32_t slot_count_;
  int64_t max_seq_len_;
  BlockAllocator allocator_;
  std::vector<Slot> slots_;             // slot_count_ slots, then branches
  std::vector<int32_t> free_branches_;  // branch numbers not in use
  std::vector<BlockCopy> copies_;       // not yet taken
  bool prefix_caching_ = true;
};

}  // namespace specd
