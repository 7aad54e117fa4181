// Speculative decoding is lossless: greedy output equals target-only greedy token for
// token (for every K, batch size and prompt length mix), sampled output has the
// target's distribution, and stop conditions apply to accepted tokens only.
#include "tests/support/doctest_torch.hpp"

#include <map>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/speculation/speculative_round.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/joint_distribution.hpp"
#include "tests/support/spec_pairs.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

DriverRequest spec_request(const std::vector<int32_t>& prompt, int32_t k, int32_t max_tokens) {
  DriverRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.spec.k = k;
  return r;
}

// Greedy grid: every prompt, in batches of `batch`, equals target-only greedy.
void check_greedy_grid(TestPair& pair, const std::vector<int32_t>& ks, const std::vector<size_t>& batches,
                       SpecStats* totals_for_k4) {
  const auto prompts = mixed_prompts();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& p : prompts) expected.push_back(target_only(*pair.target, p, 24));
  for (int32_t k : ks) {
    for (size_t batch : batches) {
      CAPTURE(k);
      CAPTURE(batch);
      for (size_t first = 0; first < prompts.size(); first += batch) {
        std::vector<DriverRequest> reqs;
        for (size_t i = first; i < std::min(prompts.size(), first + batch); ++i)
          reqs.push_back(spec_request(prompts[i], k, 24));
        SpecModels models = pair.models();
        auto results = generate_speculative(models, reqs, nullptr);
        for (size_t i = 0; i < results.size(); ++i) {
          CHECK(results[i].tokens == expected[first + i]);
          if (k == 4 && batch == 1 && totals_for_k4) {
            totals_for_k4->drafted += results[i].stats.drafted;
            totals_for_k4->accepted += results[i].stats.accepted;
            totals_for_k4->rounds += results[i].stats.rounds;
            totals_for_k4->accepted_per_position.resize(4, 0);
            for (size_t j = 0; j < results[i].stats.accepted_per_position.size(); ++j) {
              totals_for_k4->accepted_per_position[j] += results[i].stats.accepted_per_position[j];
            }
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("greedy speculation equals target-only greedy: random draft, K 1/2/4/8, batches 1/3/8") {
  TestPair pair = make_pair(false, 8);
  SpecStats totals;
  check_greedy_grid(pair, {1, 2, 4, 8}, {1, 3, 8}, &totals);
  MESSAGE("random draft acceptance at K=4: " << double(totals.accepted) / double(totals.drafted));
  CHECK(totals.accepted < totals.drafted / 2);  // this draft really disagrees often
}

TEST_CASE("greedy speculation equals target-only greedy when rejections land at every draft position") {
  TestPair pair = make_pair(true, 8);
  SpecStats totals;
  check_greedy_grid(pair, {1, 2, 4, 8}, {1, 3, 8}, &totals);
  MESSAGE("perturbed draft acceptance at K=4: " << double(totals.accepted) / double(totals.drafted));
  // Rounds that reached position i and were rejected there: reached(i) - accepted(i).
  REQUIRE(totals.accepted_per_position.size() == 4);
  int64_t reached = totals.rounds;
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(reached - totals.accepted_per_position[i] > 0);
    reached = totals.accepted_per_position[i];
  }
  CHECK(totals.accepted_per_position[3] > 0);  // and full accepts (bonus tokens) happen too
}

TEST_CASE("rows with different K, speculation off, and the lookup drafter share one batch losslessly") {
  TestPair pair = make_pair(true, 6);
  const auto prompts = mixed_prompts();
  std::vector<DriverRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(spec_request(prompts[i + 3], 1 + i, 30));
  reqs[2].spec.enabled = false;
  reqs[4].spec.drafter = DrafterKind::lookup;
  reqs[5].spec.adaptive = true;
  reqs[1].sampling.repetition_penalty = 1.3;
  SpecModels models = pair.models();
  auto results = generate_speculative(models, reqs, nullptr);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(results[i].tokens == target_only(*pair.target, reqs[i].prompt, 30, reqs[i].sampling));
  }
  CHECK(results[2].stats.rounds == 0);
  CHECK(results[1].stats.drafted > 0);
}

// The actors skip a newcomer's draft prefill while the batch planner keeps K = 0; the
// draft slot may still hold a finished request's longer context. The Drafter keeps only
// what that context shares with the new one and feeds the rest in its first step.
TEST_CASE("a reused draft slot holding a longer stale context is cut to the shared prefix before drafting") {
  TestPair pair = make_pair(true, 2);
  SpecModels models = pair.models();
  Drafter drafter = borrow_drafter(models);
  Verifier verifier = borrow_verifier(models);
  const std::vector<int32_t> prompt = mixed_prompts()[5];
  std::vector<int32_t> stale(prompt.begin(), prompt.begin() + 3);  // shares 3 tokens, then differs
  stale.resize(60, 5);
  const DraftPrefill leftover{1, stale};
  drafter.prefill(*pair.draft_cache, std::span<const DraftPrefill>(&leftover, 1));
  REQUIRE(pair.draft_cache->length(1) == 60);

  SpecSettings spec;
  spec.k = 4;
  KPlanner planner({.sequence = {.max_seq_len = 128, .k_max = 8}, .has_draft_model = true});
  SpecSequence seq(prompt, 0, 1, SamplingParams{}, spec, planner.start(spec, true));
  TargetPrefill first_prompt{0, prompt, seq.sampling, seq.rng};
  const FirstToken first_token = verifier.prefill(*pair.target_cache, std::span(&first_prompt, 1)).front();
  seq.tokens.push_back(first_token.token);
  seq.rng = first_token.rng;
  SpecSequence* batch[] = {&seq};
  // The first draft step catches the slot up on the rest of the context: not a draft
  // step's price, so it is left out of the step times the cost model learns from.
  const RoundResult first = speculative_round(planner, drafter, verifier, models, batch);
  CHECK(first.draft_steps == 4);
  CHECK(first.draft_step_times.size() == 3);
  CHECK(pair.draft_cache->length(1) == static_cast<int64_t>(prompt.size()) + 1 + 3);  // context, t1..t3
  int32_t drafted = first.rows[0].drafted;
  while (seq.tokens.size() < prompt.size() + 24) {
    const RoundResult next = speculative_round(planner, drafter, verifier, models, batch);
    CHECK(next.draft_step_times.size() == static_cast<size_t>(next.draft_steps));
    drafted += next.rows[0].drafted;
  }
  const std::vector<int32_t> generated(seq.tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                                       seq.tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()) + 24);
  CHECK(generated == target_only(*pair.target, prompt, 24));
  CHECK(drafted > 0);
}

TEST_CASE("max_tokens is exact and EOS ends generation at the accepted token") {
  TestPair pair = make_pair(true, 1);
  const auto prompt = mixed_prompts()[5];
  const auto expected = target_only(*pair.target, prompt, 40);
  for (int32_t max_tokens : {1, 2, 3, 5, 9, 17}) {
    for (int32_t k : {1, 4, 8}) {
      SpecModels models = pair.models();
      auto r = generate_speculative(models, {spec_request(prompt, k, max_tokens)}, nullptr).front();
      CHECK(r.tokens == std::vector<int32_t>(expected.begin(), expected.begin() + max_tokens));
      CHECK(r.finish_reason == FinishReason::length);
    }
  }
  auto req = spec_request(prompt, 8, 40);
  req.eos_ids = {expected[11]};
  SpecModels models = pair.models();
  auto r = generate_speculative(models, {req}, nullptr).front();
  const auto stop_at = std::find(expected.begin(), expected.end(), expected[11]) - expected.begin();
  CHECK(r.tokens == std::vector<int32_t>(expected.begin(), expected.begin() + stop_at + 1));
  CHECK(r.finish_reason == FinishReason::stop);
}

TEST_CASE("near max_seq_len K shrinks and the last tokens come from plain target steps") {
  TestPair pair = make_pair(true, 1, 40);
  const auto prompt = mixed_prompts()[7];  // 1 + 7*13 % 47 = 45 % 47... length below
  std::vector<int32_t> short_prompt(prompt.begin(), prompt.begin() + std::min<size_t>(prompt.size(), 20));
  KvCache cache(pair.target->config(), 1, 40, KvCache::blocks_to_hold(1, 40));
  GenerationRequest ref;
  ref.prompt = short_prompt;
  ref.max_tokens = 100;
  auto expected = generate_target_only(*pair.target, cache, ref);
  SpecModels models = pair.models();
  auto r = generate_speculative(models, {spec_request(short_prompt, 8, 100)}, nullptr).front();
  CHECK(r.tokens == expected.tokens);
  CHECK(r.tokens.size() == 40 - short_prompt.size() + 1);
  CHECK(r.finish_reason == FinishReason::length);
}

TEST_CASE("sampled speculation has the target's joint distribution of three tokens (chi-square, p < 0.001)") {
  // Exact target-only probabilities of (t1, t2, t3) under top-k 3, then the counts of
  // N speculative samples (K = 2, so t2 and t3 come from one speculative round).
  TestPair pair = make_pair(true, 8);
  const std::vector<int32_t> prompt = {1, 40, 41, 42};
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*pair.target, prompt, sp);
  REQUIRE(exact.size() == 27);
  const int64_t n = 24000;
  const JointSample sample = sample_joint3(pair.models(), prompt, sp, n, 1000);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  CHECK(outside == 0);
  const SpecStats& stats = sample.stats;
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical
                    << "), sampled acceptance " << stats.acceptance_rate());
  CHECK(test.dof >= 5);
  CHECK(test.passes());
  CHECK(stats.accepted > 0);
  CHECK(stats.accepted < stats.drafted);
}

TEST_CASE("logit bias, presence and frequency penalties keep greedy speculation exact: K 1/4, lookup, one batch") {
  TestPair pair = make_pair(true, 6);
  const auto prompts = mixed_prompts();
  std::vector<DriverRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(spec_request(prompts[i + 2], i % 2 ? 4 : 1, 30));
  reqs[0].sampling.frequency_penalty = 1.5;
  reqs[1].sampling.presence_penalty = 2.0;
  reqs[2].sampling.logit_bias = {{prompts[4][1], 3.0f}, {7, -100.0f}};
  reqs[3].sampling.frequency_penalty = 0.7;
  reqs[3].sampling.presence_penalty = -0.5;
  reqs[3].sampling.repetition_penalty = 1.2;
  reqs[4].sampling.presence_penalty = 1.0;
  reqs[4].spec.drafter = DrafterKind::lookup;
  reqs[5].sampling.logit_bias = {{11, 2.5f}};
  reqs[5].spec.adaptive = true;
  SpecModels models = pair.models();
  auto results = generate_speculative(models, reqs, nullptr);
  int changed = 0;
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(results[i].tokens == target_only(*pair.target, reqs[i].prompt, 30, reqs[i].sampling));
    changed += results[i].tokens != target_only(*pair.target, reqs[i].prompt, 30) ? 1 : 0;
    CHECK(results[i].stats.drafted > 0);
  }
  CHECK(changed >= 5);  // the settings really change what the target picks
}

TEST_CASE("sampled speculation under min-p, penalties and logit bias keeps the target's joint distribution") {
  // As the chi-square test above, with every logit change OpenAI clients send: the
  // presence and frequency penalties read the tokens generated before each position.
  TestPair pair = make_pair(true, 8);
  const std::vector<int32_t> prompt = {1, 40, 41, 42};
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 4;
  sp.min_p = 0.15;
  sp.presence_penalty = 0.6;
  sp.frequency_penalty = 0.9;
  sp.logit_bias = {{40, 1.0f}};
  const auto exact = exact_joint3(*pair.target, prompt, sp);
  REQUIRE(exact.size() >= 8);
  const int64_t n = 24000;
  const JointSample sample = sample_joint3(pair.models(), prompt, sp, n, 1000);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  CHECK(outside == 0);
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical << ")");
  CHECK(test.dof >= 5);
  CHECK(test.passes());
  CHECK(sample.stats.accepted > 0);
}

TEST_CASE("log-probabilities are the target's at each token, bit for bit the same with and without speculation") {
  TestPair pair = make_pair(true, 4);
  const auto prompts = mixed_prompts();
  auto reference = [&](const std::vector<int32_t>& prompt, SamplingParams sp) {
    KvCache cache(pair.target->config(), 1, 128, KvCache::blocks_to_hold(1, 128));
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = 20;
    r.sampling = sp;
    return generate_target_only(*pair.target, cache, r);
  };
  for (int32_t k : {0, 1, 4}) {
    CAPTURE(k);
    std::vector<DriverRequest> reqs;
    for (int i = 0; i < 4; ++i) {
      reqs.push_back(spec_request(prompts[i + 1], k, 20));
      reqs.back().spec.enabled = k > 0;
      reqs.back().sampling.logprobs = i == 0 ? 0 : 5;
    }
    reqs[3].sampling.temperature = 0.8;  // sampled: the log-probabilities stay the model's own
    reqs[3].sampling.seed = 9;
    SpecModels models = pair.models();
    const auto results = generate_speculative(models, reqs, nullptr);
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      const SpecResult& got = results[i];
      REQUIRE(got.logprobs.size() == got.tokens.size());
      const GenerationResult want = reference(reqs[i].prompt, reqs[i].sampling);
      if (reqs[i].sampling.greedy()) REQUIRE(got.tokens == want.tokens);
      // Sampled rows follow their own tokens: compare where the two runs agree so far.
      for (size_t t = 0; t < got.tokens.size() && t < want.tokens.size() && got.tokens[t] == want.tokens[t]; ++t) {
        CAPTURE(t);
        const TokenLogprobs& a = got.logprobs[t];
        const TokenLogprobs& b = want.logprobs[t];
        CHECK(a.chosen.id == got.tokens[t]);
        CHECK(a.chosen.logprob == b.chosen.logprob);
        CHECK(a.chosen.logprob <= 0.0f);
        REQUIRE(a.top.size() == static_cast<size_t>(reqs[i].sampling.logprobs));
        for (size_t j = 0; j < a.top.size(); ++j) {
          CHECK(a.top[j].id == b.top[j].id);
          CHECK(a.top[j].logprob == b.top[j].logprob);
          if (j > 0) CHECK(a.top[j].logprob <= a.top[j - 1].logprob);
        }
        if (reqs[i].sampling.greedy() && !a.top.empty()) CHECK(a.top[0].id == a.chosen.id);
      }
      if (k > 0) CHECK(got.stats.drafted > 0);
    }
  }
}

TEST_CASE("statistics: acceptance rate, per-token alpha, accepted per position, tokens per round") {
  SpecStats s;
  s.record(4, 2);  // t1 t2 accepted, t3 rejected
  s.record(4, 4);  // all accepted: bonus token
  s.record(2, 0);  // t1 rejected
  CHECK(s.rounds == 3);
  CHECK(s.drafted == 10);
  CHECK(s.accepted == 6);
  CHECK(s.rejections == 2);
  CHECK(s.emitted == 9);
  CHECK(s.accepted_per_position == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(s.acceptance_rate() == doctest::Approx(0.6));
  CHECK(s.alpha() == doctest::Approx(0.75));
  CHECK(s.tokens_per_round() == doctest::Approx(3.0));
}

TEST_CASE("bad requests are refused before any slot is taken") {
  TestPair pair = make_pair(false, 2);
  SpecModels models = pair.models();
  auto expect_invalid = [&](DriverRequest r) {
    try {
      generate_speculative(models, {r}, nullptr);
      FAIL("accepted a bad request");
    } catch (const SpecdError& e) {
      CHECK(e.code() == ErrorCode::bad_value);
    }
  };
  DriverRequest ok = spec_request({1, 5, 6}, 4, 8);
  DriverRequest r = ok;
  r.stop = {"x"};  // stop strings without a tokenizer cannot be matched
  expect_invalid(r);
  r = ok;
  r.prompt = {};
  expect_invalid(r);
  r = ok;
  r.prompt = {1, 500};
  expect_invalid(r);
  r = ok;
  r.max_tokens = 0;
  expect_invalid(r);
  r = ok;
  r.sampling.top_p = 0;
  expect_invalid(r);
  r = ok;
  r.spec.k = -1;
  expect_invalid(r);
}

TEST_CASE("a row's draft lag counts what rounds without its draft model appended; drafting clears it") {
  KPlanner planner({.sequence = {.max_seq_len = 1024, .k_max = 8}, .has_draft_model = true});
  SpecSettings spec;
  spec.k = 4;
  SpecSequence seq({1, 2, 3}, 0, 0, SamplingParams{}, spec, planner.start(spec, true));
  RoundOutput plain;
  plain.tokens = {4};
  apply_output(seq, plain);
  apply_output(seq, plain);
  CHECK(seq.draft_lag == 2);
  CHECK(running_request(seq, 10).draft_lag == 2);
  RoundOutput drafted;
  drafted.tokens = {5, 6};
  drafted.drafted = 3;
  drafted.accepted = 1;
  apply_output(seq, drafted);
  CHECK(seq.draft_lag == 0);
  SpecSettings lookup = spec;
  lookup.drafter = DrafterKind::lookup;
  SpecSequence by_lookup({1, 2, 3}, 0, -1, SamplingParams{}, lookup, planner.start(lookup, false));
  apply_output(by_lookup, plain);
  CHECK(by_lookup.draft_lag == 0);
}
