// The paged KV cache (engine/model/kv_cache): blocks taken as a slot grows and given back
// when it shrinks or ends, a pool that runs out refusing with nothing changed, the
// prefix cache (commit, map_prefix, its counters, switched off), copy on write of a
// shared block, the BF16 size at Llama-3.2-3B shapes, and a forward over a mapped
// prefix giving the logits of computing it.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::random_model;
using specd::testing::tiny_config;

namespace {

std::vector<int32_t> table(const KvCache& c, int32_t slot) {
  const auto t = c.block_table(slot);
  return {t.begin(), t.end()};
}

std::vector<int32_t> tokens(int32_t n, int32_t from = 3) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SpecdError& e) {
    return e.code();
  }
  FAIL("expected a SpecdError");
  return ErrorCode::internal;
}

ModelConfig llama_3b_shapes() {
  ModelConfig c = tiny_config();
  c.num_hidden_layers = 28;
  c.num_attention_heads = 24;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  return c;
}

int64_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  REQUIRE(f);
  REQUIRE(std::fscanf(f, "%ld %ld", &pages, &resident) == 2);
  std::fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

// The logits of the last of `ids` fed to `slot` from its current length.
at::Tensor feed(LlamaModel& m, KvCache& c, int32_t slot, const std::vector<int32_t>& ids, size_t from) {
  std::vector<int64_t> rest(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
  const auto n = static_cast<int64_t>(rest.size());
  return m.forward({at::tensor(rest, at::kLong).view({1, n}), {slot}, {n}}, c, LogitsFor::last_position)[0];
}

}  // namespace

TEST_CASE("a slot takes blocks as its length grows; truncation keeps a partial last block and frees the rest") {
  KvCache c(tiny_config(), 2, 64, 8);
  CHECK(c.block_size() == KvCache::kDefaultBlockSize);
  CHECK(c.total_blocks() == 8);
  c.set_length(0, 1);
  CHECK(table(c, 0) == std::vector<int32_t>{0});
  c.set_length(0, 16);
  CHECK(table(c, 0) == std::vector<int32_t>{0});
  c.set_length(0, 17);
  CHECK(table(c, 0) == std::vector<int32_t>{0, 1});
  c.set_length(1, 5);
  c.set_length(0, 40);
  CHECK(table(c, 0) == std::vector<int32_t>{0, 1, 3});
  CHECK(c.available_blocks() == 4);
  c.truncate_to(0, 20);  // position 16..19 keep block 1
  CHECK(c.length(0) == 20);
  CHECK(table(c, 0) == std::vector<int32_t>{0, 1});
  CHECK(c.available_blocks() == 5);
  c.set_length(0, 16);  // shrinking through set_length is truncate_to
  CHECK(table(c, 0) == std::vector<int32_t>{0});
  CHECK(c.available_blocks() == 6);
  CHECK(code_of([&] { c.truncate_to(0, 17); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { c.truncate_to(0, -1); }) == ErrorCode::invalid_argument);
}

TEST_CASE("reserve takes blocks without changing the length; release gives every block back") {
  KvCache c(tiny_config(), 2, 64, 8);
  c.reserve(1, 33);
  CHECK(c.length(1) == 0);
  CHECK(table(c, 1).size() == 3);
  CHECK(c.available_blocks() == 5);
  c.truncate_to(1, 0);  // blocks wholly beyond the length go back, reserved or not
  CHECK(table(c, 1).empty());
  c.set_length(1, 50);
  CHECK(c.available_blocks() == 4);
  c.release(1);
  CHECK(c.length(1) == 0);
  CHECK(table(c, 1).empty());
  CHECK(c.available_blocks() == 8);
}

TEST_CASE("growing past the pool or max_seq_len is out_of_capacity and changes nothing") {
  KvCache c(tiny_config(), 2, 64, 4);
  c.set_length(0, 48);
  c.set_length(1, 3);
  CHECK(c.available_blocks() == 0);
  CHECK(code_of([&] { c.set_length(1, 17); }) == ErrorCode::out_of_capacity);
  CHECK(code_of([&] { c.reserve(1, 17); }) == ErrorCode::out_of_capacity);
  CHECK(c.length(1) == 3);
  CHECK(table(c, 1) == std::vector<int32_t>{3});
  c.set_length(1, 16);  // within its one block
  CHECK(c.length(1) == 16);
  CHECK(code_of([&] { c.set_length(0, 65); }) == ErrorCode::out_of_capacity);
  CHECK(code_of([&] { c.reserve(0, 65); }) == ErrorCode::out_of_capacity);
  CHECK(c.length(0) == 48);
  CHECK(table(c, 0) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("non-positive sizes and unknown slots are invalid_argument") {
  const ModelConfig t = tiny_config();
  CHECK(code_of([&] { KvCache(t, 0, 64, 4); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { KvCache(t, 1, 0, 4); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { KvCache(t, 1, 64, 0); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { KvCache(t, 1, 64, 4, 0); }) == ErrorCode::invalid_argument);
  KvCache c(t, 2, 64, 4);
  CHECK(code_of([&] { c.set_length(2, 1); }) == ErrorCode::invalid_argument);
  CHECK(code_of([&] { (void)c.length(-1); }) == ErrorCode::invalid_argument);
  CHECK(KvCache::blocks_to_hold(3, 33) == 9);
  CHECK(KvCache::blocks_to_hold(3, 32, 8) == 12);
}

TEST_CASE("committed full blocks are mapped by a second slot with the same tokens, leaving one token to compute") {
  KvCache c(tiny_config(), 3, 64, 8);
  const std::vector<int32_t> prompt = tokens(40);
  CHECK(c.map_prefix(0, prompt) == 0);  // nothing cached yet
  c.set_length(0, 40);
  c.commit(0, prompt);
  c.commit(0, prompt);  // idempotent
  CHECK(c.map_prefix(1, prompt) == 32);
  CHECK(c.length(1) == 32);
  CHECK(table(c, 1) == std::vector<int32_t>{0, 1});
  // A prompt of exactly two blocks maps one: its last token must be computed.
  CHECK(c.map_prefix(2, tokens(32)) == 16);
  CHECK(table(c, 2) == std::vector<int32_t>{0});
  CHECK(code_of([&] { c.map_prefix(2, prompt); }) == ErrorCode::invalid_argument);  // not empty
  CHECK(code_of([&] { c.commit(2, prompt); }) == ErrorCode::invalid_argument);      // beyond its length
  // Ended sequences leave their committed blocks cached, not referenced.
  c.release(0);
  c.release(1);
  c.release(2);
  CHECK(c.available_blocks() == 8);
  CHECK(c.map_prefix(0, prompt) == 32);
  CHECK(table(c, 0) == std::vector<int32_t>{0, 1});
  // A different second block finds only the first.
  std::vector<int32_t> other = prompt;
  other[20] = 999;
  CHECK(c.map_prefix(1, other) == 16);
}

TEST_CASE("with prefix caching off, map_prefix maps nothing and commit keeps nothing") {
  KvCache c(tiny_config(), 2, 64, 8);
  c.set_prefix_caching(false);
  const std::vector<int32_t> prompt = tokens(40);
  c.set_length(0, 40);
  c.commit(0, prompt);
  CHECK(c.map_prefix(1, prompt) == 0);
  CHECK(c.length(1) == 0);
  c.set_prefix_caching(true);
  CHECK(c.map_prefix(1, prompt) == 0);  // nothing was committed while off
}

TEST_CASE("a write into a shared block left partial by truncation goes to a copy") {
  KvCache c(tiny_config(), 3, 64, 8);
  const std::vector<int32_t> prompt = tokens(40);
  c.set_length(0, 40);
  std::vector<float> k(2 * 16), v(2 * 16);
  for (int32_t p = 0; p < 40; ++p) {
    std::fill(k.begin(), k.end(), static_cast<float>(p));
    std::fill(v.begin(), v.end(), static_cast<float>(-p));
    for (int32_t layer = 0; layer < 2; ++layer) c.pool().write(layer, table(c, 0)[p / 16], p % 16, k.data(), v.data());
  }
  c.commit(0, prompt);
  REQUIRE(c.map_prefix(1, prompt) == 32);
  c.truncate_to(1, 20);
  CHECK(table(c, 1) == std::vector<int32_t>{0, 1});  // still the shared blocks
  c.reserve(1, 21);
  const std::vector<int32_t> own = table(c, 1);
  // The ledger records the copy; whoever writes the storage makes it first.
  const std::vector<BlockCopy> copies = c.take_copies();
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].from == 1);
  CHECK(copies[0].to == own[1]);
  CHECK(c.take_copies().empty());
  c.pool().copy_block(copies[0].from, copies[0].to);
  CHECK(own[0] == 0);
  CHECK(own[1] != 1);
  for (int32_t layer = 0; layer < 2; ++layer) {
    for (int32_t h = 0; h < 2; ++h) {
      const kernels::PagedKv shared = c.pool().head(layer, h, table(c, 0).data());
      const kernels::PagedKv copy = c.pool().head(layer, h, own.data());
      const int64_t n = 16 * 16;
      CHECK(std::memcmp(shared.keys + 1 * shared.block_stride + shared.head_offset,
                        copy.keys + own[1] * copy.block_stride + copy.head_offset, n * 2) == 0);
      CHECK(std::memcmp(shared.values + 1 * shared.block_stride + shared.head_offset,
                        copy.values + own[1] * copy.block_stride + copy.head_offset, n * 2) == 0);
    }
  }
  c.reserve(1, 22);  // once copied, the block is the slot's own
  CHECK(table(c, 1) == own);
  // The owner truncating into its own committed block copies too.
  c.truncate_to(0, 20);
  c.set_length(0, 30);
  CHECK(table(c, 0)[1] != 1);
  CHECK(c.map_prefix(2, prompt) == 32);
  CHECK(table(c, 2) == std::vector<int32_t>{0, 1});
}

TEST_CASE("a branch shares its parent's blocks, copies the partial one on its first write, and is adopted or dropped") {
  KvCache c(tiny_config(), 2, 64, 12);
  c.set_length(0, 20);  // blocks 0 (full) and 1 (partial)
  const std::vector<int32_t> parent = table(c, 0);
  const int32_t free_before = c.available_blocks();
  const int32_t a = c.fork(0);
  const int32_t b = c.fork(0);
  CHECK(a >= c.slot_count());
  CHECK(b != a);
  CHECK(c.branch_count() == 2);
  CHECK(c.length(a) == 20);
  CHECK(table(c, a) == parent);
  CHECK(c.available_blocks() == free_before);  // sharing takes no block
  // Each writer of position 20 gets its own copy of the partial block; the full one stays shared.
  c.reserve(0, 21);
  c.reserve(a, 21);
  c.reserve(b, 21);
  CHECK(table(c, 0)[0] == parent[0]);
  CHECK(table(c, a)[0] == parent[0]);
  CHECK(table(c, 0)[1] != table(c, a)[1]);
  CHECK(table(c, a)[1] != table(c, b)[1]);
  c.reserve(a, 40);  // a deeper path takes blocks of its own
  CHECK(table(c, a).size() == 3);
  // The slot adopts branch a: its own blocks go back, a's become its.
  const std::vector<int32_t> kept = table(c, a);
  c.adopt(0, a);
  CHECK(table(c, 0) == kept);
  CHECK(c.length(0) == 20);
  CHECK_THROWS_AS(c.length(a), SpecdError);
  c.drop(b);
  CHECK(c.branch_count() == 0);
  CHECK(c.available_blocks() == free_before - 1);  // block 0, a's copy of block 1 and its third
  CHECK_THROWS_AS(c.drop(0), SpecdError);          // a slot is not a branch
  const int32_t again = c.fork(0);                 // branch numbers are reused
  CHECK((again == a || again == b));
  c.drop(again);
  c.release(0);
  CHECK(c.available_blocks() == 12);
}

TEST_CASE("at Llama-3.2-3B shapes a token takes 114,688 bytes, and the pool only reserves its address space") {
  const ModelConfig c3b = llama_3b_shapes();
  CHECK(KvCache::bytes_per_token(c3b) == 114688);  // 28 layers x {K,V} x 8 heads x 128 x 2 bytes
  const int64_t before = resident_bytes();
  KvCache c(c3b, 32, 8192, KvCache::blocks_to_hold(32, 8192));
  CHECK(c.total_blocks() == 16384);
  CHECK(c.bytes() == int64_t{16384} * 16 * 114688);  // 30 GB of address space
  c.set_length(0, 100);
  std::vector<float> k(8 * 128, 1.0f);
  for (int32_t layer = 0; layer < 28; ++layer) c.pool().write(layer, table(c, 0)[0], 0, k.data(), k.data());
  CHECK(resident_bytes() - before < (int64_t{64} << 20));
}

TEST_CASE("a forward over a mapped prefix gives the logits of computing the whole prompt") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 17);
  KvCache c(model->config(), 3, 64, 12);
  std::vector<int32_t> prompt(45);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37 + 11) % 97);
  const at::Tensor computed = feed(*model, c, 0, prompt, 0);
  c.commit(0, prompt);
  const int64_t mapped = c.map_prefix(1, prompt);
  REQUIRE(mapped == 32);
  CHECK(at::equal(feed(*model, c, 1, prompt, static_cast<size_t>(mapped)), computed));
  // Slot 1 rewrites positions 20.. of the shared block 1 with other tokens: its copy, not
  // the cached block, so a third sequence still maps the prompt's keys and values.
  c.truncate_to(1, 20);
  std::vector<int32_t> other = prompt;
  for (size_t i = 20; i < other.size(); ++i) other[i] = static_cast<int32_t>((other[i] + 5) % 97);
  (void)feed(*model, c, 1, other, 20);
  CHECK(c.map_prefix(2, prompt) == 32);
  CHECK(at::equal(feed(*model, c, 2, prompt, 32), computed));
}

TEST_CASE("a forward the pool cannot hold is out_of_capacity and keeps no block it took") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 19);
  KvCache c(model->config(), 2, 64, 4);
  const std::vector<int32_t> prompt = tokens(40, 1);
  (void)feed(*model, c, 0, std::vector<int32_t>(prompt.begin(), prompt.begin() + 20), 0);
  REQUIRE(c.available_blocks() == 2);
  CHECK(code_of([&] { (void)feed(*model, c, 1, prompt, 0); }) == ErrorCode::out_of_capacity);
  CHECK(c.available_blocks() == 2);
  CHECK(c.length(1) == 0);
  CHECK(table(c, 1).empty());
  CHECK(feed(*model, c, 1, std::vector<int32_t>(prompt.begin(), prompt.begin() + 30), 0).size(0) == 97);
}
