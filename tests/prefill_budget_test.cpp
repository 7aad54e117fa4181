// Tests for engine/planning/prefill_budget: the prompt tokens a round's pass carries,
// priced on a pass curve of exact binary fractions (1/8 s + 1/128 s a row).
#include "engine/planning/prefill_budget.hpp"

#include <doctest/doctest.h>

#include "engine/planning/round_cost_model.hpp"

using namespace specd;

namespace {

RoundCostModel linear_pass(int32_t max_rows) {
  RoundCostModel costs(1, 0, max_rows);
  for (int32_t rows : {1, 2, 4, 8, 16, 32, 64, 128, 256}) costs.observe_verify(rows, 0.125 + rows / 128.0);
  return costs;
}

PrefillBudgetInputs decoding(double slowdown) {
  PrefillBudgetInputs in;
  in.cap = 128;
  in.floor = 16;
  in.slowdown = slowdown;
  in.verify_rows = 10;
  in.round_seconds = 0.25;  // the pass plus drafting and overhead
  in.waiting_tokens = 1000;
  return in;
}

}  // namespace

TEST_CASE("while others decode, the chunk is the largest that keeps the round within the slowdown") {
  const RoundCostModel costs = linear_pass(300);
  // Allowed: (2 - 1) x 0.25 s of added pass = 32 rows at 1/128 s.
  CHECK(prefill_budget(decoding(2.0), &costs) == 32);
  // (3 - 1) x 0.25 s = 64 rows.
  CHECK(prefill_budget(decoding(3.0), &costs) == 64);
  // A generous slowdown is held to the cap.
  CHECK(prefill_budget(decoding(100.0), &costs) == 128);
}

TEST_CASE("what a chunk adds is read off the curve") {
  const RoundCostModel costs = linear_pass(300);
  CHECK(prefill_added_seconds(10, 32, &costs) == 0.25);
  CHECK(prefill_added_seconds(10, 32, nullptr) == 0);
}

TEST_CASE("a prompt always advances: the floor goes even when it costs more than the allowance") {
  const RoundCostModel costs = linear_pass(300);
  PrefillBudgetInputs in = decoding(1.125);  // 1/32 s allowed: 4 rows
  CHECK(prefill_budget(in, &costs) == 16);
  in.cap = 8;  // the floor never exceeds the cap
  CHECK(prefill_budget(in, &costs) == 8);
}

TEST_CASE("alone, unmeasured or switched off, a prompt takes the cap") {
  const RoundCostModel costs = linear_pass(300);
  PrefillBudgetInputs alone = decoding(2.0);
  alone.verify_rows = 0;
  CHECK(prefill_budget(alone, &costs) == 128);
  CHECK(prefill_budget(decoding(2.0), nullptr) == 128);
  const RoundCostModel empty(1, 0, 300);
  CHECK(prefill_budget(decoding(2.0), &empty) == 128);
  PrefillBudgetInputs off = decoding(0);
  CHECK(prefill_budget(off, &costs) == 128);
  PrefillBudgetInputs no_rounds = decoding(2.0);
  no_rounds.round_seconds = 0;
  CHECK(prefill_budget(no_rounds, &costs) == 128);
  PrefillBudgetInputs unbounded = decoding(0);
  unbounded.cap = 0;  // prefill_chunk 0: whole prompts
  CHECK(prefill_budget(unbounded, &costs) == 1000);
  unbounded.slowdown = 2.0;  // still priced while others decode
  CHECK(prefill_budget(unbounded, &costs) == 32);
}
