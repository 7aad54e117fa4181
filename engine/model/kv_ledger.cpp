#include "engine/model/kv_ledger.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

int64_t checked_max_seq_len(int32_t slots, int64_t max_seq_len, int32_t blocks, int32_t block_size) {
  if (slots <= 0 || max_seq_len <= 0 || blocks <= 0 || block_size <= 0) {
    throw SpecdError(ErrorCode::invalid_argument,
                     "a KV cache needs slots, max_seq_len, blocks and block_size > 0 (got " + std::to_string(slots) +
                         ", " + std::to_string(max_seq_len) + ", " + std::to_string(blocks) + ", " +
                         std::to_string(block_size) + ")");
  }
  return max_seq_len;
}

}  // namespace

KvLedger::KvLedger(int32_t slots, int64_t max_seq_len, int32_t blocks, int32_t block_size)
    : slot_count_(slots),
      max_seq_len_(checked_max_seq_len(slots, max_seq_len, blocks, block_size)),
      allocator_(blocks, block_size),
      slots_(static_cast<size_t>(slots)) {}

int32_t KvLedger::blocks_to_hold(int32_t slots, int64_t max_seq_len, int32_t block_size) {
  const int64_t blocks = static_cast<int64_t>(slots) * ((max_seq_len + block_size - 1) / block_size);
  if (slots <= 0 || max_seq_len <= 0 || block_size <= 0 || blocks > std::numeric_limits<int32_t>::max()) {
    throw SpecdError(ErrorCode::invalid_argument, "no KV pool holds " + std::to_string(slots) + " slots of " +
                                                      std::to_string(max_seq_len) + " positions");
  }
  return static_cast<int32_t>(blocks);
}

const KvLedger::Slot& KvLedger::at(int32_t slot) const {
  if (slot < 0 || slot >= static_cast<int32_t>(slots_.size()) || !slots_[static_cast<size_t>(slot)].live) {
    throw SpecdError(ErrorCode::invalid_argument, "KV slot " + std::to_string(slot) + " outside [0, " +
                                                      std::to_string(slot_count()) + ") and not a live branch");
  }
  return slots_[static_cast<size_t>(slot)];
}

KvLedger::Slot& KvLedger::branch(int32_t branch) {
  if (branch < slot_count_) {
    throw SpecdError(ErrorCode::invalid_argument, "KV slot " + std::to_string(branch) + " is not a branch");
  }
  return at(branch);
}

int32_t KvLedger::fork(int32_t slot) {
  Slot& parent = at(slot);
  for (int32_t block : parent.blocks) allocator_.share(block);
  // Neither may now write into a block the other reads.
  parent.frozen = static_cast<int32_t>(parent.blocks.size());
  Slot copy = parent;
  copy.owner = parent.owner >= 0 ? parent.owner : slot;
  int32_t id;
  if (free_branches_.empty()) {
    id = static_cast<int32_t>(slots_.size());
    slots_.push_back(std::move(copy));
  } else {
    id = free_branches_.back();
    free_branches_.pop_back();
    slots_[static_cast<size_t>(id)] = std::move(copy);
  }
  return id;
}

void KvLedger::adopt(int32_t slot, int32_t branch_id) {
  Slot& taken = branch(branch_id);
  Slot& s = at(slot);
  if (&s == &taken) throw SpecdError(ErrorCode::invalid_argument, "a KV slot cannot adopt itself");
  allocator_.release_all(s.blocks);
  const int32_t owner = s.owner;
  s = std::move(taken);
  s.live = true;
  s.owner = owner;
  taken = Slot{};
  taken.live = false;
  free_branches_.push_back(branch_id);
}

void KvLedger::drop(int32_t branch_id) {
  Slot& b = branch(branch_id);
  allocator_.release_all(b.blocks);
  b = Slot{};
  b.live = false;
  free_branches_.push_back(branch_id);
}

int32_t KvLedger::blocks_covering(int64_t length) const {
  return static_cast<int32_t>((length + block_size() - 1) / block_size());
}

std::vector<BlockCopy> KvLedger::take_copies() {
  std::vector<BlockCopy> out;
  out.swap(copies_);
  return out;
}

void KvLedger::set_length(int32_t slot, int64_t length) {
  if (length <= at(slot).length) return truncate_to(slot, length);
  reserve(slot, length);
  slots_[static_cast<size_t>(slot)].length = length;
}

void KvLedger::reserve(int32_t slot, int64_t length) {
  Slot& s = at(slot);
  if (length < 0 || length > max_seq_len_) {
    throw SpecdError(ErrorCode::out_of_capacity,
                     "KV length " + std::to_string(length) + " outside [0, " + std::to_string(max_seq_len_) + "]");
  }
  const auto have = static_cast<int32_t>(s.blocks.size());
  // The block holding position `length` is the next one written; a shared one is copied first.
  const auto next = static_cast<int32_t>(s.length / block_size());
  const bool copy = length > s.length && next < s.frozen;
  const int32_t fresh = std::max(0, blocks_covering(length) - have);
  if (fresh == 0 && !copy) return;
  std::optional<std::vector<int32_t>> got = allocator_.allocate(fresh + (copy ? 1 : 0));
  if (!got) {
    throw SpecdError(ErrorCode::out_of_capacity, "the KV pool has " + std::to_string(available_blocks()) +
                                                     " blocks left, slot " + std::to_string(slot) + " needs " +
                                                     std::to_string(fresh + (copy ? 1 : 0)) + " more");
  }
  auto taken = got->begin();
  if (copy) {
    copies_.push_back({s.blocks[next], *taken});
    allocator_.release(s.blocks[next]);
    s.blocks[next] = *taken++;
    s.frozen = next;
  }
  s.blocks.insert(s.blocks.end(), taken, got->end());
}

void KvLedger::truncate_to(int32_t slot, int64_t length) {
  Slot& s = at(slot);
  if (length < 0 || length > s.length) {
    throw SpecdError(ErrorCode::invalid_argument,
                     "truncate_to " + std::to_string(length) + " outside [0, " + std::to_string(s.length) + "]");
  }
  const int32_t keep = blocks_covering(length);
  if (keep < static_cast<int32_t>(s.blocks.size())) {
    allocator_.release_all(std::span<const int32_t>(s.blocks).subspan(static_cast<size_t>(keep)));
    s.blocks.resize(static_cast<size_t>(keep));
  }
  s.length = length;
  s.frozen = std::min(s.frozen, keep);
  s.keys.resize(std::min(s.keys.size(), static_cast<size_t>(length / block_size())));
  s.fed.resize(std::min(s.fed.size(), static_cast<size_t>(length)));
}

std::vector<int32_t> KvLedger::branches_of(int32_t slot) const {
  std::vector<int32_t> out;
  for (auto b = static_cast<size_t>(slot_count_); b < slots_.size(); ++b) {
    if (slots_[b].live && slots_[b].owner == slot) out.push_back(static_cast<int32_t>(b));
  }
  return out;
}

void KvLedger::release(int32_t slot) {
  if (slot < slot_count_) {
    for (int32_t b : branches_of(slot)) drop(b);
  }
  Slot& s = at(slot);
  allocator_.release_all(s.blocks);
  s = Slot{};
}

int64_t KvLedger::map_prefix(int32_t slot, std::span<const int32_t> tokens) {
  Slot& s = at(slot);
  if (s.length != 0 || !s.blocks.empty()) {
    throw SpecdError(ErrorCode::invalid_argument, "map_prefix on KV slot " + std::to_string(slot) + ", not empty");
  }
  if (!prefix_caching_) return 0;
  const std::span<const int32_t> fits = tokens.first(std::min<size_t>(tokens.size(), max_seq_len_));
  PrefixHit hit = allocator_.match(fits);
  s.blocks = std::move(hit.blocks);
  s.length = hit.tokens;
  s.frozen = static_cast<int32_t>(s.blocks.size());
  BlockKey key;
  for (size_t i = 0; i < s.blocks.size(); ++i) {
    key = chain_key(key, fits.subspan(i * block_size(), block_size()));
    s.keys.push_back(key);
  }
  return s.length;
}

void KvLedger::commit(int32_t slot, std::span<const int32_t> tokens) {
  Slot& s = at(slot);
  if (static_cast<int64_t>(tokens.size()) > s.length) {
    throw SpecdError(ErrorCode::invalid_argument, "commit of " + std::to_string(tokens.size()) + " tokens to KV slot " +
                                                      std::to_string(slot) + " of length " + std::to_string(s.length));
  }
  if (!prefix_caching_) return;
  const size_t full = tokens.size() / block_size();
  for (size_t i = s.keys.size(); i < full; ++i) {
    const BlockKey parent = i == 0 ? BlockKey{} : s.keys.back();
    s.keys.push_back(allocator_.commit(s.blocks[i], parent, tokens.subspan(i * block_size(), block_size())));
  }
  s.frozen = std::max(s.frozen, static_cast<int32_t>(full));
}

}  // namespace specd
