// Structured output inside the speculative round: under a grammar, greedy output is the
// same token for token with and without speculation (chains, K 1/4, trees, the lookup
// drafter, batches), equal to an independent target-only reference that masks by hand,
// and every finished output is a document the schema accepts; sampled outputs too.
#include "tests/support/doctest_torch.hpp"

#include <boost/json/parse.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/grammar_cache.hpp"
#include "engine/grammar/token_vocabulary.hpp"
#include "engine/model/kv_cache.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/spec_pairs.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

constexpr int32_t kEos = 1;

// The tiny models' 97 ids as a byte-level vocabulary: 0 is BOS, 1 EOS, 2..96 the
// printable ASCII characters, so any grammar can be written over them.
std::shared_ptr<const grammar::TokenVocabulary> ascii_vocabulary() {
  std::vector<std::string> bytes(97);
  for (int32_t id = 2; id < 97; ++id) bytes[static_cast<size_t>(id)] = std::string(1, static_cast<char>(32 + id - 2));
  const std::vector<int32_t> special{0}, eos{kEos};
  return std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), special, eos);
}

std::string text_of(const std::vector<int32_t>& tokens) {
  std::string out;
  for (int32_t id : tokens)
    if (id >= 2) out += static_cast<char>(32 + id - 2);
  return out;
}

// Bounded documents: once the object closes only EOS (and bounded whitespace) is left.
constexpr const char* kSchema = R"({"type":"object","properties":{"ok":{"type":"boolean"},)"
                                R"("color":{"enum":["red","green","blue"]},"note":{"type":"string","maxLength":6}},)"
                                R"("required":["ok","color"],"additionalProperties":false})";

std::vector<int32_t> reference(TestPair& pair, const DriverRequest& r) {
  KvCache cache(pair.target->config(), 1, 128, KvCache::blocks_to_hold(1, 128));
  GenerationRequest g;
  g.prompt = r.prompt;
  g.sampling = r.sampling;
  g.max_tokens = r.max_tokens;
  g.eos_ids = r.eos_ids;
  g.grammar = r.grammar;
  return generate_target_only(*pair.target, cache, g).tokens;
}

void check_document(const std::vector<int32_t>& tokens) {
  REQUIRE(!tokens.empty());
  if (tokens.back() != kEos) return;  // stopped at max_tokens: a prefix, checked by the grammar as it went
  const boost::json::object doc = boost::json::parse(text_of(tokens)).as_object();
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
  for (int variant = 0; variant < 5; ++variant) {
    CAPTURE(variant);
    std::vector<DriverRequest> reqs;
    for (int i = 0; i < 6; ++i) {
      DriverRequest r;
      r.prompt = prompts[static_cast<size_t>(i + 3)];
      r.max_tokens = 60;
      r.eos_ids = {kEos};
      r.grammar = grammar;
      r.spec.enabled = variant > 0;
      r.spec.k = variant == 1 ? 1 : 4;
      if (variant == 3) r.spec.tree = {TreeMode::fixed, {2, 2, 1}};
      if (variant == 4) r.spec.drafter = i % 2 ? DrafterKind::lookup : DrafterKind::model;
      reqs.push_back(std::move(r));
    }
    SpecModels models = pair.models();
    const auto results = generate_speculative(models, reqs, nullptr);
    for (int i = 0; i < 6; ++i) {
      CAPTURE(i);
      const auto& got = results[static_cast<size_t>(i)];
      CHECK(got.tokens == reference(pair, reqs[static_cast<size_t>(i)]));
      check_document(got.tokens);
      finished += !got.tokens.empty() && got.tokens.back() == kEos;
      if (variant > 0 && variant < 4) CHECK(got.stats.drafted > 0);
    }
  }
  CHECK(finished >= 20);  // most end their document and stop
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
