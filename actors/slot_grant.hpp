#pragma once
// The KV slots a request holds from admission to retirement (CacheManager grants them).
#include <cstdint>

namespace specd::actors {

struct SlotGrant {
  int32_t target_slot = -1;
  int32_t draft_slot = -1;  // -1: the request does not draft with the model
};

}  // namespace specd::actors
