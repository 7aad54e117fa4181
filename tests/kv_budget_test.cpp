// The KV pools' size: derived from available memory or configured in bytes, the same
// number of blocks for both models, and a budget that cannot hold one request of
// max_seq_len refused with what it needs. Byte sizes as configuration writes them.
#include <doctest/doctest.h>

#include "engine/base/byte_size.hpp"
#include "engine/base/errors.hpp"
#include "engine/planning/kv_budget.hpp"

using namespace specd;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Llama-3.2-3B's KV (28 layers, 8 KV heads of 128, BF16) and the 1B's (16 layers, 8 of 64).
KvBudgetInput padded_pair() {
  KvBudgetInput in;
  in.target_bytes_per_token = 2 * 28 * 8 * 128 * 2;
  in.draft_bytes_per_token = 2 * 16 * 8 * 64 * 2;
  in.block_size = 16;
  in.max_batch = 32;
  in.sequence.max_seq_len = 1024;
  in.sequence.k_max = 8;
  return in;
}

std::string refusal(const KvBudgetInput& in) {
  try {
    plan_kv_budget(in);
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::bad_value);
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("a configured budget gives both pools the blocks it pays for") {
  KvBudgetInput in = padded_pair();
  CHECK(in.target_bytes_per_token == 114'688);
  in.configured_bytes = 4 * kGiB;
  const KvBudget b = plan_kv_budget(in);
  const int64_t block_bytes = (114'688 + 32'768) * 16;
  CHECK(b.blocks == 4 * kGiB / block_bytes);
  CHECK(b.bytes == b.blocks * block_bytes);
  CHECK(b.bytes <= 4 * kGiB);
  CHECK_FALSE(b.derived);
  CHECK(b.tokens() == static_cast<int64_t>(b.blocks) * 16);
}

TEST_CASE("a derived budget takes half of what is available, and no more than max_batch full requests") {
  KvBudgetInput in = padded_pair();
  in.available_bytes = 8 * kGiB;
  const KvBudget half = plan_kv_budget(in);
  CHECK(half.derived);
  CHECK(half.bytes <= 4 * kGiB);
  CHECK(half.bytes > 4 * kGiB - (114'688 + 32'768) * 16);
  in.available_bytes = 1000 * kGiB;
  CHECK(plan_kv_budget(in).blocks == 32 * 1024 / 16);  // max_batch x max_seq_len
  in.target_bytes_per_token = 100;
  in.draft_bytes_per_token = 0;
  in.max_batch = 1;
  in.available_bytes = kGiB;
  // One request at its longest, with a round's drafts past it, always fits.
  CHECK(plan_kv_budget(in).blocks == (1024 + 8 + 1 + 15) / 16);
}

TEST_CASE("a budget too small for one request of max_seq_len is refused with what it needs") {
  KvBudgetInput in = padded_pair();
  in.sequence.max_seq_len = 8192;
  in.configured_bytes = 64 << 20;
  const std::string configured = refusal(in);
  CAPTURE(configured);
  CHECK(configured.find("needs at least 1.13 GiB for one request of max_seq_len 8192") != std::string::npos);
  CHECK(configured.find("kv_cache_memory is 64.00 MiB") != std::string::npos);
  in.configured_bytes = 0;
  in.available_bytes = kGiB;
  const std::string derived = refusal(in);
  CAPTURE(derived);
  CHECK(derived.find("half the memory available, 512.00 MiB") != std::string::npos);
  in.block_size = 0;
  CHECK(refusal(in) == "kv_block_size must be in [1, 1024]");
}

TEST_CASE("the start-up line says what was chosen") {
  KvBudgetInput in = padded_pair();
  in.configured_bytes = 4 * kGiB;
  const std::string line = describe(plan_kv_budget(in), in, true);
  CAPTURE(line);
  CHECK(line.rfind("KV cache 4.00 GiB ([engine] kv_cache_memory): 1820 blocks of 16 tokens per model = 29120 tokens",
                   0) == 0);
  CHECK(line.find("112.00 KiB a token for the target and 32.00 KiB for the draft; prefix cache on") !=
        std::string::npos);
}

TEST_CASE("byte sizes with units") {
  CHECK(parse_byte_size("4GiB", "x") == 4 * kGiB);
  CHECK(parse_byte_size(" 2 kib", "x") == 2048);
  CHECK(parse_byte_size("3MB", "x") == 3'000'000);
  CHECK(parse_byte_size("17", "x") == 17);
  CHECK(parse_byte_size("0.5 GiB", "x") == kGiB / 2);
  CHECK_THROWS_WITH_AS(parse_byte_size("", "engine.kv_cache_memory"),
                       doctest::Contains("engine.kv_cache_memory: '' is not a byte size"), SpecdError);
  CHECK_THROWS_AS(parse_byte_size("-1GiB", "x"), SpecdError);
  CHECK_THROWS_AS(parse_byte_size("4 GiBs", "x"), SpecdError);
  CHECK_THROWS_AS(parse_byte_size("1e30", "x"), SpecdError);
  CHECK(format_bytes(96) == "96 B");
  CHECK(format_bytes(3 * kGiB / 2) == "1.50 GiB");
}
