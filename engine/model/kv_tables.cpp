#include "engine/model/kv_tables.hpp"

#include <string>

#include "engine/base/errors.hpp"
#include "engine/model/kv_block_pool.hpp"

namespace specd {

const SlotTable& KvTables::at(int32_t slot) const {
  if (!has(slot))
    throw SpecdError(ErrorCode::invalid_argument, "KV slot " + std::to_string(slot) + " not in the tables");
  return slots[static_cast<size_t>(slot)];
}

SlotTable& KvTables::at(int32_t slot) { return const_cast<SlotTable&>(static_cast<const KvTables*>(this)->at(slot)); }

void add_table(KvTables& tables, const KvLedger& ledger, int32_t slot) {
  if (tables.has(slot)) return;
  const std::span<const int32_t> blocks = ledger.block_table(slot);  // throws for a slot the ledger lacks
  if (static_cast<int32_t>(tables.slots.size()) <= slot) tables.slots.resize(static_cast<size_t>(slot) + 1);
  tables.slots[static_cast<size_t>(slot)] = {slot, {blocks.begin(), blocks.end()}, ledger.length(slot)};
}

void apply_copies(const KvTables& tables, KvBlockPool& storage) {
  for (const BlockCopy& c : tables.copies) storage.copy_block(c.from, c.to);
}

KvTables tables_of(KvLedger& ledger, std::span<const int32_t> slots) {
  KvTables t{.block_size = ledger.block_size(), .max_seq_len = ledger.max_seq_len()};
  for (int32_t slot : slots) add_table(t, ledger, slot);
  t.copies = ledger.take_copies();
  return t;
}

}  // namespace specd
