// Structured output inside the speculative round: under a grammar, greedy output is the
// same token for token with and without speculation (chains, K 1/4, trees, the lookup
// drafter, batches), equal to an independent target-only reference that masks by hand,
// and every finished output is a document the schema accepts; sampled outputs too, and
// they have the masked target's joint distribution (chi-square).
#include "tests/support/doctest_torch.hpp"

#include <boost/json/parse.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/grammar_cache.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/grammar_pair.hpp"
#include "tests/support/joint_distribution.hpp"
#include "tests/support/spec_pairs.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

constexpr int32_t kEos = kAsciiEos;

// Bounded documents: once the object closes only EOS (and bounded whitespace) is left.
constexpr const char* kSchema = R"({"type":"object","properties":{"ok":{"type":"boolean"},)"
                                R"("color":{"enum":["red","green","blue"]},"note":{"type":"string","maxLength":6}},)"
                                R"("required":["ok","color"],"additionalProperties":false})";

void check_document(const std::vector<int32_t>& tokens) {
  REQUIRE(!tokens.empty());
  if (tokens.back() != kEos) return;  // stopped at max_tokens: a prefix, checked by the grammar as it went
  const boost::json::object doc = boost::json::parse(ascii_text(tokens)).as_object();
  CHECK(doc.at("ok").is_bool());
  const std::string color(doc.at("color").as_string());
  CHECK((color == "red" || color == "green" || color == "blue"));
  if (doc.contains("note")) CHECK(doc.at("note").as_string().size() <= 6);
}

}  // namespace

TEST_CASE("greedy under a JSON schema: identical with and without speculation, K 1/4, trees, lookup, batches") {
  TestPair pair = make_pair(true, 6);
  const auto grammar = grammar::compile_grammar(grammar::GrammarKind::json_schema, kSchema, ascii_vocabulary());
  const auto prompts = mixed_prompts();
  int finished = 0;
  for (int variant = 0; variant < kExactnessSpecs; ++variant) {
    CAPTURE(variant);
    std::vector<DriverRequest> reqs;
    for (int i = 0; i < 6; ++i) {
      DriverRequest r;
      r.prompt = prompts[static_cast<size_t>(i + 3)];
      r.max_tokens = 60;
      r.eos_ids = {kEos};
      r.grammar = grammar;
      r.spec = exactness_spec(variant, static_cast<size_t>(i));
      reqs.push_back(std::move(r));
    }
    SpecModels models = pair.models();
    const auto results = generate_speculative(models, reqs, nullptr);
    for (int i = 0; i < 6; ++i) {
      CAPTURE(i);
      const auto& got = results[static_cast<size_t>(i)];
      CHECK(got.tokens == target_only_reference(pair, reqs[static_cast<size_t>(i)], 128));
      check_document(got.tokens);
      finished += !got.tokens.empty() && got.tokens.back() == kEos;
      if (variant > 0 && variant < 4) CHECK(got.stats.drafted > 0);
    }
  }
  CHECK(finished >= 20);  // most end their document and stop
}

TEST_CASE("tokens the grammar forces are drafted without draft-model steps, and greedy output stays exact") {
  // After "a" or "b" the grammar allows one token at a time for ten positions: a chain of
  // K = 8 takes the forced tokens after its first sampled node without calling the draft
  // model, so it drafts more tokens than it runs draft steps (a chain without forcing
  // runs one step per drafted token).
  TestPair pair = make_pair(true, 4);
  const auto g = grammar::compile_grammar(grammar::GrammarKind::gbnf,
                                          R"(root ::= ("a" | "b") "cdefghijkl" ("m" | "n") "!")", ascii_vocabulary());
  const auto prompts = mixed_prompts();
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    DriverRequest r;
    r.prompt = prompts[i];
    r.max_tokens = 20;
    r.eos_ids = {kEos};
    r.grammar = g;
    r.spec.k = 8;
    SpecModels models = pair.models();
    const SpecResult got = generate_speculative(models, {r}, nullptr)[0];
    CHECK(got.tokens == target_only_reference(pair, r, 128));
    REQUIRE(got.tokens.size() == 14);  // 13 characters and EOS
    CHECK(got.stats.drafted >= 10);
    CHECK(got.draft_steps * 2 <= got.stats.drafted);
  }
}

TEST_CASE("sampled speculation under a JSON schema and a GBNF grammar: every output follows the grammar") {
  TestPair pair = make_pair(true, 8);
  const auto vocabulary = ascii_vocabulary();
  const auto schema = grammar::compile_grammar(grammar::GrammarKind::json_schema, kSchema, vocabulary);
  const auto gbnf = grammar::compile_grammar(grammar::GrammarKind::gbnf,
                                             "root ::= (\"yes\" | \"no\") \" \" [0-9]{2,3} \".\"", vocabulary);
  const auto prompts = mixed_prompts();
  for (const auto& g : {schema, gbnf}) {
    std::vector<DriverRequest> reqs;
    for (int i = 0; i < 8; ++i) {
      DriverRequest r;
      r.prompt = prompts[static_cast<size_t>(i)];
      r.max_tokens = 60;
      r.eos_ids = {kEos};
      r.grammar = g;
      r.sampling.temperature = 1.0;
      r.sampling.seed = 100 + static_cast<uint64_t>(i);
      r.spec.k = 4;
      reqs.push_back(std::move(r));
    }
    SpecModels models = pair.models();
    const auto results = generate_speculative(models, reqs, nullptr);
    for (size_t i = 0; i < results.size(); ++i) {
      CAPTURE(i);
      grammar::GrammarMatcher m(g);
      for (int32_t token : results[i].tokens) CHECK(m.accept_token(token));
      if (!results[i].tokens.empty() && results[i].tokens.back() == kEos) {
        if (g == schema) check_document(results[i].tokens);
      }
    }
  }
}

TEST_CASE("sampled speculation under a GBNF alternation has the masked target's joint distribution (chi-square)") {
  // Three tokens whose choices depend on the earlier ones, one of them forced ("m" "n"):
  // 14 triples. K = 2 with the draft model: t2 and t3 come from one speculative round in
  // which both the draft's proposals and the target's rows are masked. The bound is the
  // chi-square critical value at p = 0.001 for the bins left after merging those expected
  // below 5 (tests/support/chi_square.hpp).
  TestPair pair = make_pair(true, 8);
  const auto g = grammar::compile_grammar(
      grammar::GrammarKind::gbnf,
      "root ::= (\"a\" (\"b\" | \"c\" | \"d\") (\"e\" | \"f\") | \"g\" (\"h\" | \"i\") (\"j\" | \"k\" | \"l\") | "
      "\"m\" \"n\" (\"o\" | \"p\")) \"!\"",
      ascii_vocabulary());
  const std::vector<int32_t> prompt = {0, 40, 41, 42};
  SamplingParams sp;
  sp.temperature = 1.0;
  const auto exact = exact_joint3(*pair.target, prompt, sp, g);
  REQUIRE(exact.size() == 14);
  const int64_t n = 48000;
  JointSample sample;
  for (int64_t first = 0; first < n; first += 8) {
    std::vector<DriverRequest> reqs;
    for (int64_t i = first; i < std::min(n, first + 8); ++i) {
      DriverRequest r;
      r.prompt = prompt;
      r.max_tokens = 3;
      r.spec = chain_of(2);
      r.grammar = g;
      r.sampling = sp;
      r.sampling.seed = 5000 + static_cast<uint64_t>(i);
      reqs.push_back(std::move(r));
    }
    SpecModels models = pair.models();
    for (auto& res : generate_speculative(models, reqs, nullptr)) {
      sample.counts[Continuation(res.tokens.begin(), res.tokens.begin() + std::min<size_t>(3, res.tokens.size()))] += 1;
      sample.stats.drafted += res.stats.drafted;
      sample.stats.accepted += res.stats.accepted;
    }
  }
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  MESSAGE("chi2 = " << test.statistic << " (dof " << test.dof << ", critical " << test.critical
                    << "), sampled acceptance " << sample.stats.acceptance_rate());
  CHECK(outside == 0);  // nothing outside the grammar
  CHECK(test.dof >= 5);
  CHECK(test.passes());
  CHECK(sample.stats.accepted > 0);
  CHECK(sample.stats.accepted < sample.stats.drafted);
}
