// CacheManager, the one allocator of KV slots: grants in order, a draft slot only to a
// request that drafts with the model (and only when the engine has a draft model), no
// partial grants, released slots reused, and the usage it reports. SlotPool underneath.
#include <doctest/doctest.h>

#include "actors/cache_manager.hpp"
#include "engine/base/errors.hpp"
#include "engine/model/slot_pool.hpp"

using namespace specd;
using namespace specd::actors;

namespace {

struct Manager {
  Manager(int32_t slots, bool has_draft) : cache(slots, ledger(slots), has_draft ? ledger(slots) : nullptr) {}
  std::optional<SlotGrant> acquire(bool needs_draft) { return cache.acquire(needs_draft); }
  void release(SlotGrant grant) { cache.release(grant); }
  CacheUsage usage() { return cache.usage(); }

  static std::shared_ptr<KvLedger> ledger(int32_t slots) {
    return std::make_shared<KvLedger>(slots, 64, KvLedger::blocks_to_hold(slots, 64));
  }
  CacheManager cache;
};

}  // namespace

TEST_CASE("slots are granted lowest first, draft slots only to drafting requests, none once either pool is empty") {
  Manager m(2, true);
  const auto a = m.acquire(true);
  REQUIRE(a);
  CHECK(a->target_slot == 0);
  CHECK(a->draft_slot == 0);
  const auto b = m.acquire(false);  // speculation off or prompt lookup: no draft slot
  REQUIRE(b);
  CHECK(b->target_slot == 1);
  CHECK(b->draft_slot == -1);
  CHECK_FALSE(m.acquire(false));  // target slots exhausted
  CacheUsage u = m.usage();
  CHECK(u.target_in_use == 2);
  CHECK(u.draft_in_use == 1);
  CHECK(u.slots == 2);
  m.release(*a);
  const auto c = m.acquire(true);
  REQUIRE(c);
  CHECK(c->target_slot == 0);  // reused
  CHECK(c->draft_slot == 0);
  m.release(*b);
  m.release(*c);
  u = m.usage();
  CHECK(u.target_in_use == 0);
  CHECK(u.draft_in_use == 0);
}

TEST_CASE("without a draft model no request gets a draft slot") {
  Manager m(1, false);
  const auto a = m.acquire(true);
  REQUIRE(a);
  CHECK(a->draft_slot == -1);
  CHECK(m.usage().draft_in_use == 0);
  m.release(*a);
}

TEST_CASE("SlotPool hands out the lowest free slot and refuses to release a slot not in use") {
  SlotPool pool(3);
  CHECK(pool.allocate() == 0);
  CHECK(pool.allocate() == 1);
  pool.release(0);
  CHECK(pool.allocate() == 0);
  CHECK(pool.allocate() == 2);
  CHECK_FALSE(pool.allocate());
  CHECK(pool.in_use_count() == 3);
  CHECK_THROWS_AS(pool.release(7), SpecdError);
  pool.release(1);
  CHECK_THROWS_AS(pool.release(1), SpecdError);
  CHECK(pool.free_count() == 1);
}
