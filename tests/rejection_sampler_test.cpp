// The rejection sampler: greedy verification on hand-made rows; speculative sampling
// checked statistically (Pearson chi-square against the target distribution, fixed seeds,
// alpha = 0.001), its acceptance rate against sum_x min(p(x), q(x)), its use of the
// random stream, and the residual distribution's exact values.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/sampling/rejection_sampler.hpp"
#include "engine/sampling/sampling.hpp"

using namespace specd;

namespace {

using Dist = std::vector<double>;
using Counts = std::vector<int64_t>;

constexpr int64_t kRounds = 100000;

at::Tensor tensor_of(const Dist& d) { return at::tensor(d, at::kFloat); }

// Upper 0.1% points of the chi-square distribution (alpha = 0.001), indexed by degrees of freedom.
double chi2_critical_001(int dof) {
  static const double table[] = {0.0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124};
  REQUIRE(dof >= 0);
  REQUIRE(dof <= 8);
  return table[dof];
}

// Pearson chi-square of counts against p on the cells with p > 0; dof = (#cells with p > 0) - 1.
// Cells with p == 0 must be empty. With one cell (dof 0) that makes the fit exact, chi2 = 0.
void check_fit(const Counts& counts, const Dist& p, const std::string& what) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  REQUIRE(total > 0);
  double chi2 = 0;
  int cells = 0;
  for (size_t x = 0; x < p.size(); ++x) {
    if (p[x] == 0) {
      INFO(what, ": cell ", x, " has p = 0");
      CHECK(counts[x] == 0);
      continue;
    }
    ++cells;
    const double expected = p[x] * static_cast<double>(total);
    chi2 += (static_cast<double>(counts[x]) - expected) * (static_cast<double>(counts[x]) - expected) / expected;
  }
  const int dof = cells - 1;
  const double critical = chi2_critical_001(dof);
  MESSAGE(what, ": N = ", total, ", chi2 = ", chi2, ", dof = ", dof, ", critical = ", critical);
  if (dof == 0) {
    CHECK(chi2 == 0.0);
  } else {
    CHECK(chi2 < critical);
  }
}

double overlap(const Dist& p, const Dist& q) {
  double beta = 0;
  for (size_t x = 0; x < p.size(); ++x) beta += std::min(p[x], q[x]);
  return beta;
}

// Empirical acceptance within 5 standard errors of beta; exact when beta is 0 or 1.
void check_acceptance(int64_t accepted, int64_t trials, double beta, const std::string& what) {
  const double rate = static_cast<double>(accepted) / static_cast<double>(trials);
  const double se = std::sqrt(beta * (1 - beta) / static_cast<double>(trials));
  MESSAGE(what, ": acceptance ", rate, " vs beta ", beta, " (5 se = ", 5 * se, ")");
  CHECK(std::abs(rate - beta) <= 5 * se + 1e-6);
}

// K = 1 speculative rounds: draw t ~ q, verify against p; the first emitted token is t if
// accepted, else the correction. Its distribution must be p, and P(accept) = sum min(p, q).
void check_single_token_round(const Dist& p, const Dist& q, uint64_t seed, const std::string& what) {
  const std::vector<at::Tensor> targets = {tensor_of(p), tensor_of(p)};
  const std::vector<at::Tensor> drafts = {tensor_of(q)};
  Rng rng(seed);
  Counts counts(p.size(), 0);
  int64_t accepted = 0;
  int64_t malformed = 0;
  for (int64_t r = 0; r < kRounds; ++r) {
    const int32_t t = draw_from(drafts[0], rng);
    const VerifyOutcome o = verify_sampled(targets, drafts, std::span<const int32_t>(&t, 1), rng);
    if (o.accepted < 0 || o.accepted > 1 || o.next_token < 0 || o.next_token >= static_cast<int32_t>(p.size())) {
      ++malformed;
      continue;
    }
    ++counts[o.accepted == 1 ? t : o.next_token];
    accepted += o.accepted;
  }
  REQUIRE(malformed == 0);
  check_fit(counts, p, what + ", first token");
  check_acceptance(accepted, kRounds, overlap(p, q), what);
}

const Dist kGenericP = {0.05, 0.25, 0.10, 0.30, 0.20, 0.10};
const Dist kGenericQ = {0.20, 0.10, 0.25, 0.05, 0.30, 0.10};

}  // namespace

// ---- (a) one drafted token -------------------------------------------------------------

TEST_CASE("K=1 speculative sampling emits p: generic p and q over 6 tokens") {
  check_single_token_round(kGenericP, kGenericQ, 101, "generic");
}

TEST_CASE("K=1 speculative sampling emits p: q has mass where p is 0, which is never emitted") {
  check_single_token_round({0.30, 0.0, 0.45, 0.25, 0.0, 0.0}, {0.10, 0.35, 0.10, 0.15, 0.25, 0.05}, 102,
                           "q covers p's zeros");
}

TEST_CASE("K=1 speculative sampling emits p: p equal to q accepts every draft") {
  Dist p = {0.15, 0.25, 0.05, 0.20, 0.30, 0.05};
  check_single_token_round(p, p, 103, "p == q");
}

TEST_CASE("K=1 speculative sampling emits p: disjoint supports accept nothing and still emit p") {
  check_single_token_round({0.5, 0.3, 0.2, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.6, 0.3, 0.1}, 104, "disjoint");
}

TEST_CASE("K=1 speculative sampling emits p: one-hot p always emits its token") {
  check_single_token_round({0.0, 0.0, 1.0, 0.0, 0.0, 0.0}, kGenericQ, 105, "one-hot p");
}

TEST_CASE("K=1 speculative sampling emits p: one-hot q is accepted with probability p(token)") {
  check_single_token_round(kGenericP, {0.0, 0.0, 0.0, 1.0, 0.0, 0.0}, 106, "one-hot q");
}

TEST_CASE("K=1 speculative sampling emits p: both one-hot on the same token accept always") {
  const Dist hot = {0.0, 0.0, 0.0, 0.0, 1.0, 0.0};
  check_single_token_round(hot, hot, 107, "both one-hot, same token");
}

TEST_CASE("K=1 speculative sampling emits p: both one-hot on different tokens reject always") {
  check_single_token_round({1.0, 0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 1.0}, 108,
                           "both one-hot, different tokens");
}

// ---- (b) several drafted tokens ----------------------------------------------------------

// K = 3 with unigram distributions per position: p_i and q_i do not depend on earlier tokens.
// Output position j is reached iff drafts 0..j-1 are accepted, an event decided by (t_i, u_i)
// for i < j only. Those are independent of position j's own draft, uniform and draw, so given
// that position j is emitted, its token is one K=1 speculative sample from (p_j, q_j) (or,
// for j = K, the bonus drawn from p_K): its distribution is p_j. And P(n = k) is
// beta_0 ... beta_{k-1} (1 - beta_k) for k < K, beta_0 ... beta_{K-1} for k = K.
TEST_CASE("K=3 unigram-per-position: each emitted position j has distribution p_j, n has the capped geometric law") {
  const std::vector<Dist> p = {{0.10, 0.30, 0.25, 0.05, 0.20, 0.10},
                               {0.40, 0.05, 0.05, 0.20, 0.0, 0.30},
                               {0.05, 0.05, 0.50, 0.15, 0.15, 0.10},
                               {0.20, 0.0, 0.10, 0.30, 0.25, 0.15}};
  const std::vector<Dist> q = {
      {0.15, 0.20, 0.30, 0.10, 0.15, 0.10}, {0.30, 0.10, 0.05, 0.20, 0.10, 0.25}, {0.10, 0.10, 0.40, 0.10, 0.20, 0.10}};
  constexpr size_t k = 3;
  std::vector<at::Tensor> targets, drafts;
  for (const Dist& d : p) targets.push_back(tensor_of(d));
  for (const Dist& d : q) drafts.push_back(tensor_of(d));

  Rng rng(2025);
  std::vector<Counts> per_position(k + 1, Counts(6, 0));
  Counts accepted_hist(k + 1, 0);
  std::vector<int32_t> tokens(k);
  for (int64_t r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i < k; ++i) tokens[i] = draw_from(drafts[i], rng);
    const VerifyOutcome o = verify_sampled(targets, drafts, tokens, rng);
    for (int32_t j = 0; j < o.accepted; ++j) ++per_position[j][tokens[j]];
    ++per_position[o.accepted][o.next_token];
    ++accepted_hist[o.accepted];
  }
  for (size_t j = 0; j <= k; ++j) check_fit(per_position[j], p[j], "K=3 position " + std::to_string(j));

  Dist law(k + 1, 0.0);
  double reach = 1.0;
  for (size_t n = 0; n < k; ++n) {
    const double beta = overlap(p[n], q[n]);
    law[n] = reach * (1 - beta);
    reach *= beta;
  }
  law[k] = reach;
  check_fit(accepted_hist, law, "K=3 accepted count n");
}

// ---- (c) greedy --------------------------------------------------------------------------

TEST_CASE("greedy verification keeps the agreeing prefix and takes the target's next choice") {
  const std::vector<int32_t> draft = {11, 12, 13};
  SUBCASE("all accepted: the bonus is the target's choice after tK") {
    const std::vector<int32_t> choices = {11, 12, 13, 99};
    const VerifyOutcome o = verify_greedy(choices, draft);
    CHECK(o.accepted == 3);
    CHECK(o.next_token == 99);
  }
  SUBCASE("first rejected: the correction replaces t1") {
    const std::vector<int32_t> choices = {40, 12, 13, 99};
    const VerifyOutcome o = verify_greedy(choices, draft);
    CHECK(o.accepted == 0);
    CHECK(o.next_token == 40);
  }
  SUBCASE("last rejected: two kept, correction for t3") {
    const std::vector<int32_t> choices = {11, 12, 7, 99};
    const VerifyOutcome o = verify_greedy(choices, draft);
    CHECK(o.accepted == 2);
    CHECK(o.next_token == 7);
  }
  SUBCASE("a later agreement after a mismatch does not count") {
    const std::vector<int32_t> choices = {11, 5, 13, 99};
    const VerifyOutcome o = verify_greedy(choices, draft);
    CHECK(o.accepted == 1);
    CHECK(o.next_token == 5);
  }
  SUBCASE("K = 1, accepted and rejected; K = 0 is a plain target step") {
    const std::vector<int32_t> one = {11};
    const std::vector<int32_t> agree = {11, 3};
    const std::vector<int32_t> differ = {4, 3};
    CHECK(verify_greedy(agree, one).accepted == 1);
    CHECK(verify_greedy(agree, one).next_token == 3);
    CHECK(verify_greedy(differ, one).accepted == 0);
    CHECK(verify_greedy(differ, one).next_token == 4);
    const std::vector<int32_t> plain = {8};
    CHECK(verify_greedy(plain, {}).accepted == 0);
    CHECK(verify_greedy(plain, {}).next_token == 8);
  }
  SUBCASE("a choices row that is not K+1 long is rejected") {
    const std::vector<int32_t> short_row = {11, 12, 13};
    CHECK_THROWS_AS(verify_greedy(short_row, draft), SpecdError);
  }
}

// ---- (d) the random stream ---------------------------------------------------------------

namespace {

// Draft and verify `rounds` K=3 rounds from one generator; returns drafts, n and next per round.
std::vector<int32_t> run_rounds(uint64_t seed, int rounds) {
  const std::vector<at::Tensor> targets(4, tensor_of(kGenericP));
  const std::vector<at::Tensor> drafts(3, tensor_of(kGenericQ));
  Rng rng(seed);
  std::vector<int32_t> trace;
  std::vector<int32_t> tokens(3);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < 3; ++i) tokens[i] = draw_from(drafts[i], rng);
    const VerifyOutcome o = verify_sampled(targets, drafts, tokens, rng);
    trace.insert(trace.end(), tokens.begin(), tokens.end());
    trace.push_back(o.accepted);
    trace.push_back(o.next_token);
  }
  return trace;
}

// True when `used` has consumed exactly `draws` uniforms: it then continues like a fresh
// generator of the same seed that skipped that many.
bool consumed(Rng& used, uint64_t seed, int draws) {
  Rng fresh(seed);
  for (int i = 0; i < draws; ++i) fresh.uniform();
  return used.uniform() == fresh.uniform();
}

}  // namespace

TEST_CASE("sampled verification repeats for a seed and differs for another") {
  const auto a = run_rounds(7, 200);
  const auto b = run_rounds(7, 200);
  const auto c = run_rounds(8, 200);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("sampled verification uses one uniform per accept test and one per draw") {
  const at::Tensor p = tensor_of(kGenericP);
  const at::Tensor hot0 = tensor_of({1.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  const at::Tensor hot5 = tensor_of({0.0, 0.0, 0.0, 0.0, 0.0, 1.0});
  const std::vector<int32_t> tokens = {5, 5, 5};
  SUBCASE("all three accepted (p == q): 3 tests + 1 bonus draw") {
    const std::vector<at::Tensor> targets = {hot5, hot5, hot5, p}, drafts = {hot5, hot5, hot5};
    Rng rng(9);
    const VerifyOutcome o = verify_sampled(targets, drafts, tokens, rng);
    CHECK(o.accepted == 3);
    CHECK(kGenericP[o.next_token] > 0);
    CHECK(consumed(rng, 9, 4));
  }
  SUBCASE("second rejected (p(t) = 0 there): 2 tests + 1 residual draw, which is p's one token") {
    const std::vector<at::Tensor> targets = {hot5, hot0, p, p}, drafts = {hot5, hot5, hot5};
    Rng rng(10);
    const VerifyOutcome o = verify_sampled(targets, drafts, tokens, rng);
    CHECK(o.accepted == 1);
    CHECK(o.next_token == 0);
    CHECK(consumed(rng, 10, 3));
  }
  SUBCASE("q(t) == 0 is rejected defensively, with the residual draw") {
    const std::vector<at::Tensor> targets = {hot5, p}, drafts = {hot0};
    const std::vector<int32_t> one = {5};
    Rng rng(11);
    const VerifyOutcome o = verify_sampled(targets, drafts, one, rng);
    CHECK(o.accepted == 0);
    CHECK(o.next_token == 5);  // residual max(0, hot5 - hot0) = hot5
    CHECK(consumed(rng, 11, 2));
  }
}

TEST_CASE("sampled verification rejects mismatched row counts and out-of-vocab drafts") {
  const at::Tensor p = tensor_of(kGenericP);
  Rng rng(1);
  const std::vector<int32_t> two = {1, 2};
  const std::vector<at::Tensor> three = {p, p, p}, two_rows = {p, p}, one_row = {p};
  CHECK_THROWS_AS(verify_sampled(two_rows, two_rows, two, rng), SpecdError);  // needs K+1 targets
  CHECK_THROWS_AS(verify_sampled(three, one_row, two, rng), SpecdError);      // needs K drafts
  const std::vector<int32_t> bad = {1, 6};
  CHECK_THROWS_AS(verify_sampled(three, two_rows, bad, rng), SpecdError);
  const std::vector<int32_t> negative = {-1, 2};
  CHECK_THROWS_AS(verify_sampled(three, two_rows, negative, rng), SpecdError);
}

// ---- (e) the residual distribution -------------------------------------------------------

TEST_CASE("residual_distribution is norm(max(0, p - q)) with exact zeros where q >= p") {
  const at::Tensor p = tensor_of({0.50, 0.30, 0.20, 0.0});
  const at::Tensor q = tensor_of({0.25, 0.50, 0.10, 0.15});
  // max(0, p - q) = {0.25, 0, 0.10, 0}, mass 0.35.
  const at::Tensor r = residual_distribution(p, q);
  REQUIRE(r.numel() == 4);
  CHECK(r[0].item<double>() == doctest::Approx(0.25 / 0.35).epsilon(1e-6));
  CHECK(r[1].item<double>() == 0.0);
  CHECK(r[2].item<double>() == doctest::Approx(0.10 / 0.35).epsilon(1e-6));
  CHECK(r[3].item<double>() == 0.0);
  CHECK(r.sum().item<double>() == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("residual_distribution falls back to p when the residual has no mass") {
  const at::Tensor p = tensor_of({0.5, 0.25, 0.25});
  CHECK(at::equal(residual_distribution(p, p), p));
  // q differs from p only by one float ulp per entry: rounding, not a real difference.
  at::Tensor q = p.clone();
  q[0] = std::nextafter(0.5f, 1.0f);
  q[1] = std::nextafter(0.25f, 0.0f);
  CHECK(at::equal(residual_distribution(p, q), p));
  CHECK_THROWS_AS(residual_distribution(p, tensor_of({0.5, 0.5})), SpecdError);
}

// ---- token trees -----------------------------------------------------------------------

namespace {

// Depth-1 trees under the root: the first emitted token (the accepted child, or the
// token drawn after every child was rejected) must have distribution p. `drawn` children
// are drawn from q each round; `fixed` ones are deterministic tokens (q a point mass).
void check_depth1_tree(const Dist& p, const Dist& q, int32_t drawn, const std::vector<int32_t>& fixed, uint64_t seed,
                       const std::string& what) {
  const at::Tensor pt = tensor_of(p), qt = tensor_of(q);
  Rng rng(seed);
  Counts counts(p.size(), 0);
  int64_t accepted = 0;
  for (int64_t r = 0; r < kRounds; ++r) {
    std::vector<int32_t> tokens, parents;
    std::vector<at::Tensor> qs;
    for (int32_t i = 0; i < drawn; ++i) {
      tokens.push_back(draw_from(qt, rng));
      qs.push_back(qt);
    }
    for (int32_t t : fixed) {
      tokens.push_back(t);
      qs.emplace_back();
    }
    parents.assign(tokens.size(), -1);
    const TreeOutcome o = verify_tree_sampled([&](int32_t) { return pt; }, qs, {tokens, parents}, rng);
    REQUIRE(o.path.size() <= 1);
    ++counts[o.path.empty() ? o.next_token : tokens[static_cast<size_t>(o.path[0])]];
    accepted += static_cast<int64_t>(o.path.size());
  }
  check_fit(counts, p, what);
  MESSAGE(what, ": a child accepted in ", static_cast<double>(accepted) / kRounds, " of rounds");
}

}  // namespace

TEST_CASE("tree sampling emits p: one drawn child and deterministic children, duplicates among them") {
  check_depth1_tree(kGenericP, kGenericQ, 1, {3, 3, 1}, 71, "drawn + {3, 3, 1}");
}

TEST_CASE("tree sampling emits p: three children drawn from the same q (duplicates are common)") {
  check_depth1_tree(kGenericP, {0.7, 0.1, 0.05, 0.05, 0.05, 0.05}, 3, {}, 72, "3 drawn");
}

TEST_CASE("tree sampling emits p: siblings drawn without replacement, each tested against q less its elder siblings") {
  const at::Tensor pt = tensor_of(kGenericP), qt = tensor_of(kGenericQ);
  // Two siblings: a child is accepted with probability beta1 + sum over x1 of
  // P(x1 drawn and rejected) * beta2(x1), where beta1 = sum min(p, q), the residual
  // p2 = norm(max(p - q, 0)) and beta2(x1) = sum min(p2, q less x1, renormalised).
  const size_t n = kGenericP.size();
  Dist p2(n);
  double p2_mass = 0;
  for (size_t x = 0; x < n; ++x) p2_mass += p2[x] = std::max(kGenericP[x] - kGenericQ[x], 0.0);
  for (double& v : p2) v /= p2_mass;
  double two_siblings = overlap(kGenericP, kGenericQ);
  for (size_t x1 = 0; x1 < n; ++x1) {
    Dist q2 = kGenericQ;
    q2[x1] = 0;
    for (double& v : q2) v /= 1 - kGenericQ[x1];
    two_siblings += std::max(kGenericQ[x1] - kGenericP[x1], 0.0) * overlap(p2, q2);
  }
  for (int32_t siblings : {2, 6}) {
    CAPTURE(siblings);
    Rng rng(74 + static_cast<uint64_t>(siblings));
    Counts counts(n, 0);
    int64_t accepted = 0;
    for (int64_t r = 0; r < kRounds; ++r) {
      std::vector<int32_t> tokens;
      std::vector<at::Tensor> qs;
      for (Draw& d : draw_distinct(qt, siblings, rng)) {
        REQUIRE(std::find(tokens.begin(), tokens.end(), d.token) == tokens.end());
        tokens.push_back(d.token);
        qs.push_back(std::move(d.q));
      }
      REQUIRE(tokens.size() == static_cast<size_t>(siblings));
      const std::vector<int32_t> parents(tokens.size(), -1);
      const TreeOutcome o = verify_tree_sampled([&](int32_t) { return pt; }, qs, {tokens, parents}, rng);
      ++counts[o.path.empty() ? o.next_token : tokens[static_cast<size_t>(o.path[0])]];
      accepted += static_cast<int64_t>(o.path.size());
    }
    check_fit(counts, kGenericP, std::to_string(siblings) + " drawn without replacement");
    if (siblings == 2) {
      check_acceptance(accepted, kRounds, two_siblings, "2 drawn without replacement");
    } else {
      // Each rejection leaves p no mass on the rejected token, so the last of a full set
      // of siblings is the only token left to both p and q.
      CHECK(accepted == kRounds);
    }
  }
}

TEST_CASE("draw_distinct stops when q has no mass left") {
  Rng rng(9);
  const std::vector<Draw> draws = draw_distinct(tensor_of({0.0, 0.75, 0.0, 0.25}), 4, rng);
  REQUIRE(draws.size() == 2);
  CHECK(draws[0].token != draws[1].token);
  CHECK(draws[1].q[draws[0].token].item<double>() == 0.0);
  CHECK(draws[1].q[draws[1].token].item<double>() == doctest::Approx(1.0));
}

TEST_CASE("tree sampling emits p: a depth-1 tree with a deterministic child per token always accepts one") {
  check_depth1_tree(kGenericP, kGenericQ, 0, {0, 1, 2, 3, 4, 5}, 73, "6 deterministic");
  Rng rng(5);
  const std::vector<int32_t> tokens = {4, 2, 0, 1, 3, 5}, parents(6, -1);
  const std::vector<at::Tensor> qs(6);
  for (int i = 0; i < 200; ++i) {
    const at::Tensor p = tensor_of(kGenericP);
    CHECK(verify_tree_sampled([&](int32_t) { return p; }, qs, {tokens, parents}, rng).path.size() == 1);
  }
}

TEST_CASE("greedy tree verification follows the child equal to the target's choice, to the longest path") {
  // Root children 5, 7 (nodes 0, 1); under 7: 2, 9 (nodes 2, 3); under 9: 4 (node 4).
  const std::vector<int32_t> tokens = {5, 7, 2, 9, 4}, parents = {-1, -1, 1, 1, 3};
  // Target choices per row (root, nodes 0..4): root picks 7, node 1 picks 9, node 3 picks 4, node 4 picks 8.
  const std::vector<int32_t> choice = {7, 0, 9, 0, 4, 8};
  std::vector<int32_t> asked;
  const TreeOutcome o = verify_tree_greedy(
      [&](int32_t r) {
        asked.push_back(r);
        return choice[static_cast<size_t>(r)];
      },
      {tokens, parents});
  CHECK(o.path == std::vector<int32_t>{1, 3, 4});
  CHECK(o.next_token == 8);
  CHECK(asked == std::vector<int32_t>{0, 2, 4, 5});  // only the rows on the path
  const std::vector<int32_t> bad_parents = {-1, 3, 1, 1, 3};
  CHECK_THROWS_AS(verify_tree_greedy([&](int32_t) { return 0; }, {tokens, bad_parents}), SpecdError);
}
