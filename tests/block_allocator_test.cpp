// The KV block bookkeeping (engine/model/block_allocator): free and cached blocks,
// reference counts, prefix chains found by key and checked by tokens, least recently
// released blocks evicted first, and the prefix-cache counters in tokens.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/model/block_allocator.hpp"

using namespace specd;

namespace {

std::vector<int32_t> iota(int32_t from, int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// Takes blocks for `tokens` (4 per block), commits its full blocks, releases them all:
// what a finished request leaves in the cache. Returns its blocks.
std::vector<int32_t> run_sequence(BlockAllocator& a, const std::vector<int32_t>& tokens) {
  const int32_t n = (static_cast<int32_t>(tokens.size()) + 3) / 4;
  std::vector<int32_t> blocks = *a.allocate(n);
  BlockKey key;
  for (int32_t i = 0; i + 1 <= static_cast<int32_t>(tokens.size()) / 4; ++i)
    key = a.commit(blocks[i], key, std::span(tokens).subspan(i * 4, 4));
  a.release_all(blocks);
  return blocks;
}

}  // namespace

TEST_CASE("blocks are taken and given back; an allocation that cannot be met takes nothing") {
  BlockAllocator a(4, 16);
  CHECK(a.available() == 4);
  auto three = a.allocate(3);
  REQUIRE(three);
  CHECK(*three == std::vector<int32_t>{0, 1, 2});
  CHECK(a.available() == 1);
  CHECK_FALSE(a.allocate(2));
  CHECK(a.available() == 1);
  a.release_all(*three);
  CHECK(a.available() == 4);
  CHECK(a.referenced() == 0);
  CHECK_THROWS_AS(a.release(0), SpecdError);
  CHECK_THROWS_AS(BlockAllocator(0, 16), SpecdError);
}

TEST_CASE("a finished sequence's full blocks are found by the next one with the same prefix") {
  BlockAllocator a(8, 4);
  const std::vector<int32_t> first = iota(10, 10);  // 2 full blocks and 2 tokens
  const std::vector<int32_t> blocks = run_sequence(a, first);
  CHECK(a.available() == 8);  // cached blocks are available: evictable on demand
  std::vector<int32_t> next = iota(10, 9);
  next.push_back(99);
  const PrefixHit hit = a.match(next);
  CHECK(hit.blocks == std::vector<int32_t>{blocks[0], blocks[1]});
  CHECK(hit.tokens == 8);
  CHECK(a.ref_count(blocks[0]) == 1);
  CHECK(a.available() == 6);
  a.release_all(hit.blocks);
}

TEST_CASE("the last token is always left to compute, so nobody writes into a shared block") {
  BlockAllocator a(8, 4);
  run_sequence(a, iota(1, 8));  // exactly two full blocks
  CHECK(a.match(iota(1, 8)).tokens == 4);
  CHECK(a.match(iota(1, 9)).tokens == 8);
  CHECK(a.match(iota(1, 4)).tokens == 0);
}

TEST_CASE("a block is found only after the same prefix: keys chain over the parents") {
  BlockAllocator a(8, 4);
  run_sequence(a, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  // The same second block after a different first block is another prefix.
  CHECK(a.match(std::vector<int32_t>{0, 2, 3, 4, 5, 6, 7, 8, 9}).tokens == 0);
  CHECK(chain_key({}, iota(1, 4)) != chain_key(chain_key({}, iota(0, 4)), iota(1, 4)));
  CHECK(chain_key({}, iota(1, 4)) != chain_key({}, iota(1, 3)));
}

TEST_CASE("when memory is needed the least recently released cached blocks go first") {
  BlockAllocator a(4, 4);
  const auto old_blocks = run_sequence(a, iota(100, 9));  // 3 blocks, 2 keyed
  run_sequence(a, iota(200, 5));                          // 2 blocks, 1 keyed
  CHECK(a.available() == 4);
  // Free first (the unkeyed blocks), then the cache from its least recently released:
  // the old sequence released its tail first, so its second block goes before its first.
  auto taken = a.allocate(2);
  REQUIRE(taken);
  CHECK(*taken == std::vector<int32_t>{3, old_blocks[1]});
  CHECK(a.match(iota(100, 9)).tokens == 4);  // its first block is still cached
  CHECK(a.match(iota(200, 5)).tokens == 4);
  CHECK(a.available() == 0);
  CHECK_FALSE(a.allocate(1));
}

TEST_CASE("an equal block committed twice: the first stays the one found, the copy is freed") {
  BlockAllocator a(4, 4);
  auto x = *a.allocate(1);
  auto y = *a.allocate(1);
  const BlockKey kx = a.commit(x[0], {}, iota(1, 4));
  const BlockKey ky = a.commit(y[0], {}, iota(1, 4));
  CHECK(kx == ky);
  a.release(y[0]);
  a.release(x[0]);
  const PrefixHit hit = a.match(iota(1, 5));
  REQUIRE(hit.blocks.size() == 1);
  CHECK(hit.blocks[0] == x[0]);
  CHECK_THROWS_AS(a.commit(y[0], {}, iota(1, 4)), SpecdError);  // not referenced
}
