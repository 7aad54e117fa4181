// The one rule for why a request ended (engine/request/finish_reason): a failure, then a
// cancel, then the output's decision, then the caller's fallback.
#include <doctest/doctest.h>

#include <string>

#include "engine/request/finish_reason.hpp"

using namespace specd;

TEST_CASE("a failure wins over a cancel, a cancel over the output's decision") {
  CHECK(compose_finish_reason({true, true, FinishReason::stop}, FinishReason::length) == FinishReason::error);
  CHECK(compose_finish_reason({false, true, FinishReason::stop}, FinishReason::length) == FinishReason::cancelled);
  CHECK(compose_finish_reason({false, false, FinishReason::stop}, FinishReason::length) == FinishReason::stop);
  CHECK(compose_finish_reason({false, false, std::nullopt}, FinishReason::length) == FinishReason::length);
  CHECK(compose_finish_reason({}, FinishReason::cancelled) == FinishReason::cancelled);
}

TEST_CASE("the wire names") {
  CHECK(std::string(finish_reason_name(FinishReason::stop)) == "stop");
  CHECK(std::string(finish_reason_name(FinishReason::length)) == "length");
  CHECK(std::string(finish_reason_name(FinishReason::cancelled)) == "cancelled");
  CHECK(std::string(finish_reason_name(FinishReason::error)) == "error");
}
