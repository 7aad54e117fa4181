// Tests for engine/speculation/prompt_lookup: exact proposals on hand-made token sequences (most
// recent occurrence, longer n-grams first, truncation at the context's end, overlap with
// the suffix), the empty cases, argument errors, and a full scan of an 8k context.
#include "engine/speculation/prompt_lookup.hpp"

#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "engine/base/errors.hpp"

using namespace specd;

namespace {

using Ids = std::vector<int32_t>;

Ids lookup(const Ids& context, int32_t k, int32_t max_ngram = 3, int32_t min_ngram = 1) {
  return propose_by_lookup(context, k, max_ngram, min_ngram);
}

}  // namespace

TEST_CASE("a repeated pattern proposes what followed it, running into the suffix") {
  const Ids context{1, 2, 3, 4, 1, 2, 3};
  CHECK(lookup(context, 4) == Ids{4, 1, 2, 3});
  CHECK(lookup(context, 2) == Ids{4, 1});
  CHECK(lookup(context, 1) == Ids{4});
}

TEST_CASE("the most recent earlier occurrence wins over an older one") {
  // [5, 6] occurs at 0 (followed by 7) and at 3 (followed by 8, 9).
  const Ids context{5, 6, 7, 5, 6, 8, 9, 5, 6};
  CHECK(lookup(context, 2, 2) == Ids{8, 9});
  CHECK(lookup(context, 2, 3) == Ids{8, 9});
}

TEST_CASE("a longer n-gram is preferred over a more recent shorter one") {
  // [7, 1, 2] occurs at 0 (followed by 8, 5, 2); [2] alone last occurs at 5 (followed by 6).
  const Ids context{7, 1, 2, 8, 5, 2, 6, 7, 1, 2};
  CHECK(lookup(context, 3) == Ids{8, 5, 2});
  CHECK(lookup(context, 3, 2) == Ids{8, 5, 2});  // [1, 2] also occurs only at 1
  CHECK(lookup(context, 3, 1) == Ids{6, 7, 1});  // unigrams only: the more recent [2]
}

TEST_CASE("shorter n-grams are tried when the longer ones do not occur earlier") {
  const Ids context{4, 1, 2, 5, 9, 1, 2};  // [9, 1, 2] is new; [1, 2] occurs at 1
  CHECK(lookup(context, 3) == Ids{5, 9, 1});
  CHECK(lookup(context, 3, 3, 3).empty());
  CHECK(lookup(context, 3, 3, 2) == Ids{5, 9, 1});
}

TEST_CASE("the proposal is truncated where the context ends") {
  const Ids context{1, 2, 3, 1, 2};  // [3, 1, 2] is new; [1, 2] at 0 is followed by 3, 1, 2
  CHECK(lookup(context, 5) == Ids{3, 1, 2});
  CHECK(lookup(Ids{1, 1, 1}, 4, 2) == Ids{1});  // the match at 0 overlaps the suffix at 1
}

TEST_CASE("no earlier occurrence of any n-gram gives an empty proposal") {
  CHECK(lookup(Ids{1, 2, 3, 4}, 4).empty());
  CHECK(lookup(Ids{}, 4).empty());
  CHECK(lookup(Ids{7}, 4).empty());
}

TEST_CASE("k = 0 gives an empty proposal even when an n-gram matches") {
  CHECK(lookup(Ids{1, 2, 3, 4, 1, 2, 3}, 0).empty());
}

TEST_CASE("n-grams longer than the context are skipped, shorter ones still match") {
  CHECK(lookup(Ids{5, 5}, 3) == Ids{5});
  CHECK(lookup(Ids{5, 5}, 3, 3, 2).empty());
  CHECK(lookup(Ids{3, 4, 3}, 2, 5) == Ids{4, 3});
}

TEST_CASE("bad arguments are invalid_argument errors") {
  const Ids context{1, 2, 1};
  for (auto [k, max_ngram, min_ngram] : {std::tuple{-1, 3, 1}, {2, 3, 0}, {2, 1, 2}}) {
    try {
      lookup(context, k, max_ngram, min_ngram);
      FAIL("expected SpecdError for k=" << k << " max=" << max_ngram << " min=" << min_ngram);
    } catch (const SpecdError& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
    }
  }
}

TEST_CASE("an 8k context is scanned back to a match at its very start") {
  Ids context{100, 101, 102, 7};
  for (int32_t t = 1000; t < 1000 + 8180; ++t) context.push_back(t);
  context.insert(context.end(), {100, 101, 102});
  REQUIRE(context.size() == 8187);
  CHECK(lookup(context, 4) == Ids{7, 1000, 1001, 1002});
}

TEST_CASE("a lookup tree merges several earlier continuations by their common prefixes") {
  // "5 6" was followed by 7 8, 9 1 and 7 3.
  const std::vector<int32_t> context = {5, 6, 7, 8, 0, 5, 6, 9, 1, 0, 5, 6, 7, 3, 0, 5, 6};
  const LookupTree tree = propose_tree_by_lookup(context, 2, 3, 2, 2);
  // Newest continuation (7 3) first, then 9 1, then 7 8 sharing the 7.
  CHECK(tree.tokens == std::vector<int32_t>{7, 9, 3, 1, 8});
  CHECK(tree.parents == std::vector<int32_t>{-1, -1, 0, 1, 0});
  const LookupTree one = propose_tree_by_lookup(context, 2, 1, 2, 2);
  CHECK(one.tokens == propose_by_lookup(context, 2, 2, 2));
  const std::vector<int32_t> no_repeat = {1, 2, 3};
  CHECK(propose_tree_by_lookup(no_repeat, 4, 3).tokens.empty());
}
