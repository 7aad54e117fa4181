#include "engine/planning/kv_budget.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/base/byte_size.hpp"
#include "engine/base/errors.hpp"

namespace specd {

namespace {

// A number from a one-line file ("max" and absent files give nothing).
int64_t read_number(const char* path, int64_t fallback) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return fallback;
  try {
    return std::stoll(text);
  } catch (...) {
    return fallback;
  }
}

int64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace

int64_t memory_available_bytes() {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  int64_t available = meminfo_available();
  const int64_t v2_limit = read_number("/sys/fs/cgroup/memory.max", kNone);
  if (v2_limit != kNone) available = std::min(available, v2_limit - read_number("/sys/fs/cgroup/memory.current", 0));
  const int64_t v1_limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", kNone);
  if (v1_limit != kNone && v1_limit < (int64_t{1} << 60)) {
    available = std::min(available, v1_limit - read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", 0));
  }
  return std::max<int64_t>(available, 0);
}

KvBudget plan_kv_budget(const KvBudgetInput& in) {
  if (in.block_size < 1 || in.block_size > 1024) {
    throw SpecdError(ErrorCode::bad_value, "kv_block_size must be in [1, 1024]");
  }
  const int64_t block_bytes = (in.target_bytes_per_token + in.draft_bytes_per_token) * in.block_size;
  // One request at its longest, with the speculative rows a verify pass writes past it.
  const int64_t least = blocks_for(in.sequence.max_seq_len + in.sequence.k_max + 1, in.block_size);
  KvBudget b;
  b.block_size = in.block_size;
  b.derived = in.configured_bytes <= 0;
  int64_t blocks = 0;
  if (b.derived) {
    const int64_t wanted = static_cast<int64_t>(in.max_batch) * blocks_for(in.sequence.max_seq_len, in.block_size);
    blocks = std::min(std::max(wanted, least), in.available_bytes / 2 / block_bytes);
  } else {
    blocks = in.configured_bytes / block_bytes;
  }
  blocks = std::min<int64_t>(blocks, std::numeric_limits<int32_t>::max());
  if (blocks < least) {
    std::ostringstream why;
    why << "the KV cache needs at least " << format_bytes(least * block_bytes) << " for one request of max_seq_len "
        << in.sequence.max_seq_len << " (" << least << " blocks of " << in.block_size << " tokens at "
        << format_bytes(block_bytes) << " a block across both models), but ";
    if (b.derived) {
      why << "half the memory available, " << format_bytes(in.available_bytes / 2)
          << ", is less: lower max_seq_len, or set [engine] kv_cache_memory";
    } else {
      why << "kv_cache_memory is " << format_bytes(in.configured_bytes) << ": raise it or lower max_seq_len";
    }
    throw SpecdError(ErrorCode::bad_value, why.str());
  }
  b.blocks = static_cast<int32_t>(blocks);
  b.bytes = blocks * block_bytes;
  return b;
}

std::string describe(const KvBudget& b, const KvBudgetInput& in, bool prefix_cache) {
  std::ostringstream out;
  out << "KV cache " << format_bytes(b.bytes);
  if (b.derived) {
    out << " (derived: at most half of the " << format_bytes(in.available_bytes)
        << " available; set [engine] kv_cache_memory to choose)";
  } else {
    out << " ([engine] kv_cache_memory)";
  }
  out << ": " << b.blocks << " blocks of " << b.block_size << " tokens per model = " << b.tokens() << " tokens, BF16, "
      << format_bytes(in.target_bytes_per_token) << " a token for the target";
  if (in.draft_bytes_per_token > 0) out << " and " << format_bytes(in.draft_bytes_per_token) << " for the draft";
  out << "; prefix cache " << (prefix_cache ? "on" : "off");
  return out.str();
}

}  // namespace specd
