// The committed default pair (models/target, models/draft): its tokenizer, deterministic
// generation, and lossless speculation on real trained models (greedy token for token
// over a grid of K and batch sizes; sampling matched in distribution).
#include "tests/support/doctest_torch.hpp"

#include <map>

#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/joint_distribution.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

const std::filesystem::path kModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";

struct DefaultPair {
  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(kModels / "target");
  std::shared_ptr<LlamaModel> target = load_model(kModels / "target");
  std::shared_ptr<LlamaModel> draft = load_model(kModels / "draft");
};

DefaultPair& pair() {
  static DefaultPair p;
  return p;
}

const char* kPrompts[] = {
    "ROMEO:\nBut soft, what light",
    "KING HENRY VI:\nO God",
    "First Citizen:\nWe are accounted poor citizens",
    "JULIET:\n",
    "MENENIUS:\nWhat work's, my countrymen, in hand?",
    "DUKE VINCENTIO:\nBe absolute for death;",
    "GLOUCESTER:\nNow is the winter of our discontent\nMade glorious summer",
    "LADY ANNE:\nSet down, set down your honourable load,",
    "PETRUCHIO:\nGood morrow, Kate; for that's your name, I hear.",
    "KATHARINA:\nWell have you heard, but something hard of hearing:",
    "HAMLET:\nTo be, or not to be",
    "CLAUDIO:\nThe miserable have no other medicine",
    "ISABELLA:\nO, it is excellent",
    "LUCIO:\n",
    "BRUTUS:\nThe people",
    "CORIOLANUS:\nYou common cry of curs!",
    "QUEEN MARGARET:\nSo now prosperity begins to mellow",
    "Nurse:\nNow, by my maidenhead, at twelve year old,",
    "MERCUTIO:\nO, then, I see Queen Mab hath been with you.",
    "FRIAR LAURENCE:\nThe grey-eyed morn smiles on the frowning night,",
    "BIONDELLO:\nMaster, master!",
    "TRANIO:\nI pray",
};

std::vector<std::vector<int32_t>> encoded_prompts() {
  std::vector<std::vector<int32_t>> out;
  for (const char* p : kPrompts) out.push_back(pair().tokenizer->encode(p, true));
  return out;
}

std::vector<int32_t> target_only(const std::vector<int32_t>& prompt, int32_t max_tokens) {
  KvCache cache(pair().target->config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  return generate_target_only(*pair().target, cache, r).tokens;
}

}  // namespace

TEST_CASE("the default tokenizer round-trips text and has the trained special ids") {
  const Tokenizer& tok = *pair().tokenizer;
  CHECK(tok.vocab_size() == 2048);
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_ids() == std::vector<int32_t>{2});
  for (const char* text : {"ROMEO:\nBut soft, what light through yonder window breaks?", "  two  spaces\tand a tab\n\n",
                           "caf\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80", "12345 67"}) {
    CAPTURE(text);
    auto ids = tok.encode(text, false);
    CHECK(tok.decode(ids) == text);
  }
  CHECK(tok.encode("ROMEO:", true).front() == 1);
}

namespace {

// Every prompt, in batches of each size, generated with each of `settings` (one CAPTURE
// name per setting), equals target-only greedy; returns the statistics summed.
SpecStats check_greedy_grid(const std::vector<std::pair<std::string, SpecSettings>>& settings,
                            const std::vector<size_t>& batches) {
  const auto prompts = encoded_prompts();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& p : prompts) expected.push_back(target_only(p, 24));
  SpecStats totals;
  for (const auto& [name, spec] : settings) {
    for (size_t batch : batches) {
      CAPTURE(name);
      CAPTURE(batch);
      KvCache tc(pair().target->config(), 8, 256, KvCache::blocks_to_hold(8, 256)),
          dc(pair().draft->config(), 8, 256, KvCache::blocks_to_hold(8, 256));
      SpecModels models{*pair().target, tc, pair().draft.get(), &dc};
      for (size_t first = 0; first < prompts.size(); first += batch) {
        std::vector<DriverRequest> reqs;
        for (size_t i = first; i < std::min(prompts.size(), first + batch); ++i) {
          DriverRequest r;
          r.prompt = prompts[i];
          r.max_tokens = 24;
          r.spec = spec;
          reqs.push_back(r);
        }
        auto results = generate_speculative(models, reqs, nullptr);
        for (size_t i = 0; i < results.size(); ++i) {
          CHECK(results[i].tokens == expected[first + i]);
          totals.add(results[i].stats);
        }
      }
    }
  }
  return totals;
}

}  // namespace

TEST_CASE("greedy speculation on the default pair equals target-only: 22 prompts x K 1/2/4/8 x batches 1/3/8") {
  std::vector<std::pair<std::string, SpecSettings>> chains;
  for (int32_t k : {1, 2, 4, 8}) chains.emplace_back("k " + std::to_string(k), chain_of(k));
  const SpecStats totals = check_greedy_grid(chains, {1, 3, 8});
  MESSAGE("default pair greedy acceptance over the grid: " << totals.acceptance_rate());
  CHECK(totals.accepted > 0);
}

TEST_CASE(
    "greedy token trees on the default pair equal target-only: 22 prompts x trees 3,2,1 / 4 / auto x batches 1/4") {
  std::vector<std::pair<std::string, SpecSettings>> trees;
  for (const char* shape : {"3,2,1", "4", "auto"}) {
    SpecSettings spec = chain_of(3);
    std::string error;
    spec.tree = *parse_tree_settings(shape, error);
    trees.emplace_back(shape, spec);
  }
  const SpecStats totals = check_greedy_grid(trees, {1, 4});
  MESSAGE("default pair greedy trees: " << totals.accepted << " accepted of " << totals.drafted << " nodes, "
                                        << totals.tokens_per_round() << " tokens per round");
  CHECK(totals.accepted > 0);
}

TEST_CASE("sampled speculation on the default pair matches target-only in distribution (chi-square, p < 0.001)") {
  // Exact target-only probabilities of the first three tokens under top-k 3 against
  // N speculative samples with K = 2 (tokens 2 and 3 come from one speculative round).
  const std::vector<int32_t> prompt = pair().tokenizer->encode("ROMEO:\n", true);
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*pair().target, prompt, sp);
  REQUIRE(exact.size() == 27);
  KvCache tc(pair().target->config(), 8, 64, KvCache::blocks_to_hold(8, 64)),
      dc(pair().draft->config(), 8, 64, KvCache::blocks_to_hold(8, 64));
  SpecModels models{*pair().target, tc, pair().draft.get(), &dc};
  const int64_t n = 12000;
  const JointSample sample = sample_joint3(models, prompt, sp, n, 5000);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  CHECK(outside == 0);  // nothing outside the target's support
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical
                    << "), sampled acceptance " << sample.stats.acceptance_rate());
  CHECK(test.dof >= 3);
  CHECK(test.passes());
}

TEST_CASE("a stop string spanning token boundaries ends the text before it, on accepted tokens only") {
  const auto prompt = pair().tokenizer->encode("ROMEO:\nBut soft, what light", true);
  KvCache tc(pair().target->config(), 1, 256, KvCache::blocks_to_hold(1, 256)),
      dc(pair().draft->config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  SpecModels models{*pair().target, tc, pair().draft.get(), &dc};
  DriverRequest r;
  r.prompt = prompt;
  r.max_tokens = 40;
  r.spec.k = 8;
  const SpecResult free_run = generate_speculative(models, {r}, pair().tokenizer.get()).front();
  REQUIRE(free_run.text.size() > 30);
  // A stop string that starts mid-token: the text from byte 13 for 7 bytes.
  const std::string stop = free_run.text.substr(13, 7);
  r.stop = {stop, "never appears \x01"};
  const SpecResult stopped = generate_speculative(models, {r}, pair().tokenizer.get()).front();
  CHECK(stopped.finish_reason == FinishReason::stop);
  CHECK(stopped.text == free_run.text.substr(0, free_run.text.find(stop)));
  REQUIRE(stopped.tokens.size() <= free_run.tokens.size());
  CHECK(std::equal(stopped.tokens.begin(), stopped.tokens.end(), free_run.tokens.begin()));
  // The last kept token is the one that completed the stop string.
  const std::string with_last = pair().tokenizer->decode(stopped.tokens);
  const std::string without_last =
      pair().tokenizer->decode(std::vector<int32_t>(stopped.tokens.begin(), stopped.tokens.end() - 1));
  CHECK(with_last.find(stop) != std::string::npos);
  CHECK(without_last.find(stop) == std::string::npos);
}
