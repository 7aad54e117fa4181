// Tests for engine/planning/schedule_policy: the scheduler's KV accounting, admission,
// prefill sharing and preemption choice, on exact small values.
#include "engine/planning/schedule_policy.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace specd;

TEST_CASE("a decoding request's next round holds its context and k_max drafts") {
  const KvFootprint running{.context = 30, .decoding = true};
  CHECK(round_positions(running, 2) == 32);
  CHECK(reserved_positions(running, 2) == 32);
  CHECK(blocks_for(round_positions(running, 2), 16) == 2);
  CHECK(blocks_for(round_positions(running, 3), 16) == 3);
}

TEST_CASE("a request not decoding yet needs its prefill this round and reserves its first decode round") {
  const KvFootprint waiting{.to_prefill = 10};
  CHECK(round_positions(waiting, 4) == 10);
  // Prefill, the first token, then up to k_max drafts.
  CHECK(reserved_positions(waiting, 4) == 15);
  CHECK(blocks_for(reserved_positions(waiting, 4), 16) == 1);
  CHECK(blocks_for(reserved_positions(waiting, 6), 16) == 2);
}

TEST_CASE("admission holds the pool's bound, and a pool of 0 blocks has none") {
  CHECK(admits(8, 4, 12));
  CHECK_FALSE(admits(9, 4, 12));
  CHECK(admits(1'000'000, 4, 0));
}

TEST_CASE("prefill tokens go first come, first served, stopping at the first request that gets none") {
  const std::vector<int64_t> remaining{100, 30, 50};
  CHECK(share_prefill(128, remaining) == std::vector<int64_t>{100, 28});
  CHECK(share_prefill(100, remaining) == std::vector<int64_t>{100});
  CHECK(share_prefill(1000, remaining) == std::vector<int64_t>{100, 30, 50});
  CHECK(share_prefill(0, remaining).empty());
  const std::vector<int64_t> done_first{0, 30};
  CHECK(share_prefill(128, done_first).empty());
}

TEST_CASE("the youngest request is preempted, the later one of equal times, only while the round does not fit") {
  const std::vector<int64_t> admitted{5, 9, 7, 9};
  CHECK(preemption_victim(admitted, 13, 12) == std::optional<size_t>(3));
  CHECK_FALSE(preemption_victim(admitted, 12, 12));
  CHECK_FALSE(preemption_victim(admitted, 13, 0));  // no bound
  const std::vector<int64_t> alone{5};
  CHECK_FALSE(preemption_victim(alone, 100, 12));  // one request alone always runs
  // When CacheManager finds no room, whatever the estimate: the same youngest.
  CHECK(youngest_of_several(admitted) == std::optional<size_t>(3));
  CHECK_FALSE(youngest_of_several(alone));
}
