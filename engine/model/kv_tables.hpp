#pragma once
// KvTables: what a forward pass needs of a KV ledger, as a value: per slot or branch it
// touches, its block table (covering every position the pass writes) and its length at
// the start of the pass, and the block copies to make before writing. A round hands
// these to the lane that owns the storage (KvBlockPool); the ledger stays with its owner.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/kv_ledger.hpp"

namespace specd {

class KvBlockPool;

struct SlotTable {
  int32_t slot = -1;  // -1: not in these tables
  std::vector<int32_t> blocks;
  int64_t length = 0;
};

struct KvTables {
  int32_t block_size = KvLedger::kDefaultBlockSize;
  int64_t max_seq_len = 0;
  std::vector<SlotTable> slots;  // indexed by slot or branch number
  std::vector<BlockCopy> copies;

  // Throws SpecdError(invalid_argument) for a slot not in the tables.
  const SlotTable& at(int32_t slot) const;
  SlotTable& at(int32_t slot);
  bool has(int32_t slot) const {
    return slot >= 0 && slot < static_cast<int32_t>(slots.size()) && slots[static_cast<size_t>(slot)].slot == slot;
  }
};

// The ledger's tables of `slots` (repeats allowed), with the copies it owes (taken).
KvTables tables_of(KvLedger& ledger, std::span<const int32_t> slots);
// Adds one slot's table to `tables` (nothing when it is there already).
void add_table(KvTables& tables, const KvLedger& ledger, int32_t slot);
// Makes the tables' copies in `storage`: once, before the job that got them writes.
void apply_copies(const KvTables& tables, KvBlockPool& storage);

}  // namespace specd
