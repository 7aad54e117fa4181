#include "engine/planning/schedule_policy.hpp"

#include <algorithm>

namespace specd {

int64_t reserved_positions(const KvFootprint& r, int32_t k_max) {
  const int64_t context = r.decoding ? r.context : r.to_prefill + 1;
  return context + k_max;
}

int64_t round_positions(const KvFootprint& r, int32_t k_max) { return r.decoding ? r.context + k_max : r.to_prefill; }

bool admits(int64_t in_use, int64_t wanted, int32_t pool_blocks) {
  return pool_blocks <= 0 || in_use + wanted <= pool_blocks;
}

std::vector<int64_t> share_prefill(int64_t budget, std::span<const int64_t> remaining) {
  std::vector<int64_t> takes;
  for (int64_t left : remaining) {
    const int64_t take = std::min(budget, left);
    if (take <= 0) break;
    budget -= take;
    takes.push_back(take);
  }
  return takes;
}

std::optional<size_t> preemption_victim(std::span<const int64_t> admitted, int64_t need, int32_t pool_blocks) {
  if (pool_blocks <= 0 || need <= pool_blocks) return std::nullopt;
  return youngest_of_several(admitted);
}

std::optional<size_t> youngest_of_several(std::span<const int64_t> admitted) {
  if (admitted.size() <= 1) return std::nullopt;
  size_t youngest = 0;
  for (size_t i = 1; i < admitted.size(); ++i) {
    if (admitted[i] >= admitted[youngest]) youngest = i;
  }
  return youngest;
}

}  // namespace specd
