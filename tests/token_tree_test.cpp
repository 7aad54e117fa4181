// Token trees (seed 004) are lossless: greedy tree speculation equals target-only greedy
// token for token (fixed shapes, auto, lookup trees, batches mixing trees, chains and
// K = 0), sampled tree speculation has the target's joint distribution of three tokens,
// and a tree spends its extra nodes on alternatives the target does take.
#include "tests/support/doctest_torch.hpp"

#include <optional>
#include <string>

#include "engine/model/kv_cache.hpp"
#include "engine/speculation/speculative_round.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/joint_distribution.hpp"
#include "tests/support/spec_pairs.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

TreeSettings tree(const std::string& text) {
  std::string error;
  const auto parsed = parse_tree_settings(text, error);
  REQUIRE_MESSAGE(parsed, error);
  return *parsed;
}

DriverRequest tree_request(const std::vector<int32_t>& prompt, const std::string& shape, int32_t max_tokens) {
  DriverRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.spec.tree = tree(shape);
  r.spec.k = 3;
  return r;
}

}  // namespace

TEST_CASE("tree settings parse off, auto and children per depth, and refuse the rest") {
  CHECK(tree("off").mode == TreeMode::off);
  CHECK(tree("auto").mode == TreeMode::automatic);
  const TreeSettings fixed = tree("3,2,1");
  CHECK(fixed.mode == TreeMode::fixed);
  CHECK(fixed.widths == std::vector<int32_t>{3, 2, 1});
  CHECK(tree_nodes(fixed.widths) == 3 + 6 + 6);
  CHECK(tree_settings_name(fixed) == "3,2,1");
  std::string error;
  for (const char* bad : {"", "0", "2,,1", "17", "a", "2,", "4,4,4,4"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_tree_settings(bad, error));
    CHECK(!error.empty());
  }
}

TEST_CASE("greedy tree speculation equals target-only greedy: shapes x batches 1/4, random and perturbed drafts") {
  for (bool perturbed : {false, true}) {
    TestPair pair = make_pair(perturbed, 8);
    const auto prompts = mixed_prompts();
    std::vector<std::vector<int32_t>> expected;
    for (const auto& p : prompts) expected.push_back(target_only(*pair.target, p, 24));
    for (const char* shape : {"2", "8", "2,2,1", "3,2,2,1", "1,1,1", "auto"}) {
      for (size_t batch : {size_t{1}, size_t{4}}) {
        const std::string name = shape;
        CAPTURE(perturbed);
        CAPTURE(name);
        CAPTURE(batch);
        for (size_t first = 0; first < prompts.size(); first += batch) {
          std::vector<DriverRequest> reqs;
          for (size_t i = first; i < std::min(prompts.size(), first + batch); ++i)
            reqs.push_back(tree_request(prompts[i], shape, 24));
          SpecModels models = pair.models();
          const auto results = generate_speculative(models, reqs, nullptr);
          for (size_t i = 0; i < results.size(); ++i) CHECK(results[i].tokens == expected[first + i]);
          REQUIRE(pair.target_cache->branch_count() == 0);
          REQUIRE(pair.draft_cache->branch_count() == 0);
        }
      }
    }
    CHECK(pair.target_cache->branch_count() == 0);
    CHECK(pair.draft_cache->branch_count() == 0);
  }
}

TEST_CASE("trees, chains, K = 0, lookup trees and a repetition penalty share one batch losslessly") {
  TestPair pair = make_pair(true, 6);
  const auto prompts = mixed_prompts();
  std::vector<DriverRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(tree_request(prompts[i + 4], i % 2 ? "3,2" : "2,2,2", 30));
  reqs[1].spec.tree = {};  // a chain of 3
  reqs[2].spec.enabled = false;
  reqs[3].spec.drafter = DrafterKind::lookup;
  reqs[3].spec.tree = tree("4,1,1");
  reqs[4].sampling.repetition_penalty = 1.3;
  SpecModels models = pair.models();
  const auto results = generate_speculative(models, reqs, nullptr);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(results[i].tokens == target_only(*pair.target, reqs[i].prompt, 30, reqs[i].sampling));
  }
  CHECK(results[2].stats.rounds == 0);
  CHECK(results[0].stats.drafted > results[0].stats.rounds * 3);  // trees verified more nodes than their depth
}

TEST_CASE("with the same depth a tree accepts more per round than a chain (perturbed draft)") {
  TestPair pair = make_pair(true, 12);
  const auto prompts = mixed_prompts();
  auto tokens_per_round = [&](const std::string& shape) {
    SpecStats total;
    std::vector<DriverRequest> reqs;
    for (size_t i = 0; i < 12; ++i) reqs.push_back(tree_request(prompts[i], shape, 40));
    SpecModels models = pair.models();
    for (const auto& r : generate_speculative(models, reqs, nullptr)) total.add(r.stats);
    return total.tokens_per_round();
  };
  const double chain = tokens_per_round("1,1,1");
  const double wide = tokens_per_round("4,2,1");
  MESSAGE("tokens per round: chain " << chain << ", tree 4,2,1 " << wide);
  CHECK(wide > chain);
}

TEST_CASE("a tree longer than the room left near max_seq_len shrinks to fit") {
  TestPair pair = make_pair(true, 2, 48);
  std::vector<int32_t> prompt(40, 7);
  prompt[0] = 1;
  KvCache cache(pair.target->config(), 1, 48, KvCache::blocks_to_hold(1, 48));
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 100;
  const auto expected = generate_target_only(*pair.target, cache, r).tokens;
  SpecModels models = pair.models();
  const auto got = generate_speculative(models, {tree_request(prompt, "3,3,3", 100)}, nullptr).front();
  CHECK(got.tokens == expected);
}

namespace {

void check_joint3(TestPair& pair, const std::vector<int32_t>& prompt, const SpecSettings& spec, uint64_t seed,
                  std::optional<int32_t> auto_tree_extra = std::nullopt) {
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*pair.target, prompt, sp);
  REQUIRE(exact.size() == 27);
  const int64_t n = 16000;
  // Up to 5 tokens, so the round after the first token drafts the tree's full depth 2.
  const JointSample sample = sample_joint3(pair.models(), prompt, sp, n, seed, spec, 5, auto_tree_extra);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  CHECK(outside == 0);
  MESSAGE("tree " << tree_settings_name(spec.tree) << (auto_tree_extra ? " +" + std::to_string(*auto_tree_extra) : "")
                  << ": chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical
                  << "), nodes accepted " << sample.stats.accepted << " of " << sample.stats.drafted);
  CHECK(test.passes());
  if (spec.drafter == DrafterKind::model) CHECK(sample.stats.accepted > 0);
}

}  // namespace

TEST_CASE("sampled tree speculation has the target's joint distribution of three tokens (chi-square, p < 0.001)") {
  TestPair pair = make_pair(true, 8);
  const std::vector<int32_t> prompt = {1, 40, 41, 42};
  // top-k 3 leaves q at most 3 tokens: "8" gives as many children as q has tokens.
  for (const char* shape : {"3,2", "8", "2,2", "1,1"}) {
    CAPTURE(shape);
    SpecSettings spec;
    spec.tree = tree(shape);
    check_joint3(pair, prompt, spec, 3000);
  }
  // `auto` trees of 1 and of 6 nodes beyond the chain: the planner picks the budget from
  // timings, so the test pins it and every run samples the same shapes.
  for (int32_t extra : {1, 6}) {
    CAPTURE(extra);
    SpecSettings spec;
    spec.tree = tree("auto");
    check_joint3(pair, prompt, spec, 3000, extra);
  }
}

TEST_CASE("sampled lookup trees (deterministic children, several per node) keep the target's distribution") {
  TestPair pair = make_pair(true, 8, 256);
  // Every token of the vocabulary occurs twice before, with different successors: any
  // first token finds two continuations, so the round after it verifies a tree.
  std::vector<int32_t> prompt = {1};
  for (int32_t t = 0; t < 97; ++t) prompt.push_back(t);
  for (int32_t t = 0; t < 97; ++t) prompt.push_back((t * 37 + 11) % 97);
  SpecSettings spec;
  spec.drafter = DrafterKind::lookup;
  spec.tree = tree("3,1");
  check_joint3(pair, prompt, spec, 9000);
}
