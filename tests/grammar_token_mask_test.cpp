// Token masks against brute force: at every state along a document, the mask from the
// precomputed table plus the live-stack checks equals trying every token id on a copy
// of the matcher. Over the committed pair's 2048-piece SentencePiece vocabulary for
// several grammars, over a hand-made vocabulary for EOS and special tokens, and over the
// real Llama 3 vocabulary (128,256 ids) for a schema and for JSON objects.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/byte_size.hpp"
#include "engine/base/errors.hpp"
#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_cache.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/grammar/json_schema_compiler.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace g = specd::grammar;
namespace fs = std::filesystem;

namespace {

const char* const kPersonSchema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":12},"age":{"type":"integer"},"email":{"type":["string","null"]},
    "tags":{"type":"array","items":{"enum":["a","bb","c d"]},"maxItems":3},
    "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},
      "required":["city"],"additionalProperties":false},
    "friends":{"type":"array","maxItems":3,"items":{"type":"object","properties":{"n":{"type":"string"},
      "since":{"type":"integer"}},"required":["n"],"additionalProperties":false}}},
    "required":["name","age"],"additionalProperties":false})";
const char* const kPersonDoc =
    "{\"name\": \"Ann \\\"A\\\"\", \"age\": 31, \"email\": null, \"tags\": [\"bb\", \"c d\"],\n"
    "  \"address\": {\"city\": \"Z\xc3\xbcrich\", \"zip\": \"80331\"},\n"
    "  \"friends\": [{\"n\": \"Bo\"}, {\"n\": \"Cy\", \"since\": 2019}]}";

std::shared_ptr<const g::TokenVocabulary> spm_vocabulary() {
  static const auto vocab = [] {
    const auto tokenizer = specd::load_tokenizer(fs::path(SPECD_SOURCE_DIR) / "models/target");
    return std::make_shared<const g::TokenVocabulary>(g::vocabulary_from_tokenizer(*tokenizer, {}));
  }();
  return vocab;
}

std::shared_ptr<const g::TokenVocabulary> llama3_vocabulary() {
  static const auto vocab = [] {
    const fs::path file = fs::path(SPECD_LLAMA3_TOKENIZER_DIR) / "tokenizer.json";
    REQUIRE_MESSAGE(fs::exists(file),
                    "missing " << file << ": run scripts/fetch_llama3_tokenizer.sh (scripts/setup.sh does)");
    const specd::BpeTokenizer tokenizer(file);
    return std::make_shared<const g::TokenVocabulary>(
        g::vocabulary_from_tokenizer(tokenizer, g::special_ids_from_tokenizer_json(file)));
  }();
  return vocab;
}

g::TokenBitset brute_force(const g::GrammarMatcher& m, const g::TokenVocabulary& vocab) {
  g::TokenBitset out(vocab.size());
  for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
    g::GrammarMatcher copy = m;
    if (copy.accept_token(id)) out.set(id);
  }
  return out;
}

// Walks `doc` with the longest allowed token that is a prefix of what is left, checking
// the mask against brute force at each step; ends with EOS. Returns the steps taken.
int walk_and_compare(const std::shared_ptr<const g::CompiledGrammar>& compiled, const std::string& doc,
                     int max_checked_steps = 1000) {
  const g::TokenVocabulary& vocab = *compiled->vocabulary;
  g::GrammarMatcher m(compiled);
  g::TokenBitset mask;
  size_t at = 0;
  int steps = 0;
  while (true) {
    m.fill_mask(mask);
    if (steps < max_checked_steps) {
      const g::TokenBitset expected = brute_force(m, vocab);
      REQUIRE_MESSAGE(mask == expected, "mask differs from brute force after " << at << " bytes of " << doc << " ("
                                                                               << mask.count() << " vs "
                                                                               << expected.count() << " tokens)");
    }
    if (at == doc.size()) break;
    int32_t best = -1;
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
      if (!mask.test(id) || vocab.is_eos(id)) continue;
      const std::string_view bytes = vocab.bytes(id);
      if (std::string_view(doc).substr(at).starts_with(bytes) &&
          (best < 0 || bytes.size() > vocab.bytes(best).size())) {
        best = id;
      }
    }
    REQUIRE_MESSAGE(best >= 0, "no allowed token continues " << doc.substr(0, at) << " | " << doc.substr(at));
    REQUIRE(m.accept_token(best));
    at += vocab.bytes(best).size();
    ++steps;
  }
  CHECK(m.can_end());
  REQUIRE(!vocab.eos_ids().empty());
  CHECK(mask.test(vocab.eos_ids().front()));
  CHECK(m.accept_token(vocab.eos_ids().front()));
  CHECK(m.is_terminated());
  m.fill_mask(mask);
  CHECK(mask.count() == 0);
  return steps;
}

}  // namespace

TEST_CASE("masks equal brute force over the 2048-piece vocabulary for schemas and GBNF") {
  const auto vocab = spm_vocabulary();
  REQUIRE(vocab->size() == 2048);
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::json_schema, kPersonSchema, vocab), kPersonDoc) > 20);
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::any_json_object, "", vocab),
                         "{\"a\": [1, -2.5e3, {\"b\": []}, \"x\\ny\"],\n \"c\": {\"d\": true}}\n") > 20);
  const char* json_gbnf =
      "root ::= value\nvalue ::= obj | arr | str | [0-9]+ | \"null\"\n"
      "obj ::= \"{\" ( str \":\" value ( \",\" str \":\" value )* )? \"}\"\n"
      "arr ::= \"[\" ( value ( \",\" value )* )? \"]\"\nstr ::= \"\\\"\" [^\"]* \"\\\"\"\n";
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::gbnf, json_gbnf, vocab),
                         R"({"the king":[1,{"lord":null}],"ROMEO":[[],"his thee, you"]})") > 10);
  const char* tree_schema = R"({"$defs":{"n":{"type":"object","properties":{"v":{"type":"string"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["v","kids"],"additionalProperties":false}},
      "$ref":"#/$defs/n"})";
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::json_schema, tree_schema, vocab),
                         R"({"v":"a","kids":[{"v":"and the","kids":[]},{"v":"x","kids":[{"v":"","kids":[]}]}]})") > 10);
}

TEST_CASE("EOS only where the grammar can end; special and empty tokens never") {
  // ids: 0 "<s>" special, 1 "</s>" EOS, 2 "a", 3 "ab", 4 "b", 5 "", 6 "abb", 7 "c"
  const auto vocab = std::make_shared<const g::TokenVocabulary>(
      std::vector<std::string>{"<s>", "</s>", "a", "ab", "b", "", "abb", "c"}, std::vector<int32_t>{0},
      std::vector<int32_t>{1});
  const auto compiled = g::compile_grammar(g::GrammarKind::gbnf, "root ::= \"a\" \"b\"* | \"<s>\"", vocab);
  g::GrammarMatcher m(compiled);
  g::TokenBitset mask;
  m.fill_mask(mask);
  CHECK(mask.count() == 3);  // a, ab, abb: "<s>" is a special token even where its bytes fit
  CHECK(mask.test(2));
  CHECK(mask.test(3));
  CHECK(mask.test(6));
  CHECK_FALSE(m.accept_token(0));
  CHECK_FALSE(m.accept_token(1));
  CHECK_FALSE(m.accept_token(5));
  REQUIRE(m.accept_token(3));
  m.fill_mask(mask);
  CHECK(mask.count() == 2);  // b and EOS
  CHECK(mask.test(4));
  CHECK(mask.test(1));
  CHECK(m.forced_token(mask) == -1);  // b or EOS
  REQUIRE(m.accept_token(1));
  CHECK(m.is_terminated());
  CHECK(m.forced_token(mask) == -1);  // nothing
  CHECK_FALSE(m.accept_token(4));
  m.rollback(1);  // EOS can be rolled back like any step
  CHECK_FALSE(m.is_terminated());
  CHECK(m.accept_token(4));
  const auto only_c = g::compile_grammar(g::GrammarKind::gbnf, "root ::= \"c\" \"a\"", vocab);
  g::GrammarMatcher forced(only_c);
  CHECK(forced.forced_token(mask) == 7);
  REQUIRE(forced.accept_token(7));
  CHECK(forced.forced_token(mask) == 2);
  REQUIRE(forced.accept_token(2));
  CHECK(forced.forced_token(mask) == 1);  // EOS
}

TEST_CASE("after a rollback the mask is the one before the rolled-back tokens") {
  const auto vocab = spm_vocabulary();
  const auto compiled = g::compile_grammar(g::GrammarKind::json_schema, kPersonSchema, vocab);
  g::GrammarMatcher m(compiled);
  REQUIRE(m.accept_bytes("{\"name\": \"An"));
  g::TokenBitset before, after;
  m.fill_mask(before);
  REQUIRE(m.accept_bytes("n\", "));
  REQUIRE(m.accept_bytes("\"age\": 3"));
  m.fill_mask(after);
  CHECK_FALSE(after == before);
  m.rollback(2);
  m.fill_mask(after);
  CHECK(after == before);
}

TEST_CASE("the grammar cache compiles a text once and evicts the least recently used by bytes") {
  const auto vocab = spm_vocabulary();
  const std::string ta = "root ::= \"a\"", tb = "root ::= \"b\"";
  // An entry's bytes: its tables and its key (the kind's digit and the text).
  auto entry = [](const std::shared_ptr<const g::CompiledGrammar>& c, const std::string& text) {
    return c->bytes() + 1 + text.size();
  };
  const size_t a_bytes = entry(g::compile_grammar(g::GrammarKind::gbnf, ta, vocab), ta);
  const size_t b_bytes = entry(g::compile_grammar(g::GrammarKind::gbnf, tb, vocab), tb);
  const size_t object_bytes = entry(g::compile_grammar(g::GrammarKind::any_json_object, "", vocab), "");
  MESSAGE("entry bytes: a " << a_bytes << ", b " << b_bytes << ", any JSON object " << object_bytes);
  REQUIRE(object_bytes > 10 * a_bytes);  // entries differ in size: the budget is not a count
  // Room for a and b, not for all three.
  g::GrammarCache cache(vocab, a_bytes + b_bytes + object_bytes - 1);
  const auto a = cache.get(g::GrammarKind::gbnf, ta);
  const auto b = cache.get(g::GrammarKind::gbnf, tb);
  CHECK(cache.bytes() == a_bytes + b_bytes);
  CHECK(cache.find(g::GrammarKind::gbnf, tb) == b);
  CHECK(cache.get(g::GrammarKind::gbnf, ta) == a);
  CHECK(cache.hits() == 2);  // find() and get() alike
  CHECK(cache.find(g::GrammarKind::json_schema, "{}") == nullptr);
  CHECK(cache.misses() == 2);  // a miss of find() is the following get()'s to count
  cache.get(g::GrammarKind::any_json_object, "");
  CHECK(cache.size() == 2);  // b, the least recently used, made room
  CHECK(cache.bytes() == a_bytes + object_bytes);
  CHECK(cache.find(g::GrammarKind::gbnf, tb) == nullptr);
  CHECK(cache.get(g::GrammarKind::gbnf, ta) == a);                    // used recently: kept
  CHECK(cache.get(g::GrammarKind::gbnf, tb) != b);                    // evicted: compiled again
  CHECK(cache.find(g::GrammarKind::any_json_object, "") == nullptr);  // ... which evicted the object grammar
  CHECK(cache.bytes() == a_bytes + b_bytes);
  CHECK(cache.misses() == 4);
  CHECK_THROWS_AS(cache.get(g::GrammarKind::json_schema, R"({"minimum":1})"), specd::SpecdError);
  CHECK(cache.size() == 2);
}

TEST_CASE("a grammar larger than the whole cache budget is refused, and nothing is evicted for it") {
  const auto vocab = spm_vocabulary();
  const std::string small = "root ::= \"a\"";
  const size_t small_bytes = g::compile_grammar(g::GrammarKind::gbnf, small, vocab)->bytes() + 1 + small.size();
  g::GrammarCache cache(vocab, small_bytes);
  cache.get(g::GrammarKind::gbnf, small);
  try {
    cache.get(g::GrammarKind::any_json_object, "");
    FAIL("no refusal");
  } catch (const specd::SpecdError& e) {
    CHECK(e.code() == specd::ErrorCode::bad_value);
    const std::string budget = specd::format_bytes(static_cast<int64_t>(small_bytes));
    CHECK(e.message().rfind("the compiled grammar takes ", 0) == 0);
    CHECK(e.message().find(", more than the whole grammar cache (" + budget + ", [engine] grammar_cache_memory)") !=
          std::string::npos);
  }
  CHECK(cache.size() == 1);
  CHECK(cache.bytes() == small_bytes);
}

TEST_CASE("masks equal brute force over the Llama 3 vocabulary") {
  const auto vocab = llama3_vocabulary();
  REQUIRE(vocab->size() == 128256);
  CHECK(vocab->is_special(128009));  // <|eot_id|>
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::json_schema, kPersonSchema, vocab), kPersonDoc) > 10);
  CHECK(walk_and_compare(g::compile_grammar(g::GrammarKind::any_json_object, "", vocab),
                         "{\"a\": [1, {\"b\": \"\"}], \"c\": null}", 12) > 5);
}

TEST_CASE("the grammar cache serves two threads asking for the same texts") {
  const auto vocab = spm_vocabulary();
  g::GrammarCache cache(vocab, size_t{64} << 20);
  const std::vector<std::string> texts = {"root ::= \"a\"+", "root ::= [0-9]{1,3}", "root ::= \"x\" | \"y\""};
  std::vector<std::shared_ptr<const g::CompiledGrammar>> seen[2];
  const auto run = [&](int t) {
    for (int round = 0; round < 20; ++round) {
      for (const std::string& text : texts) seen[t].push_back(cache.get(g::GrammarKind::gbnf, text));
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  CHECK(cache.size() == 3);
  CHECK(cache.hits() + cache.misses() == 120);
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto expected = cache.get(g::GrammarKind::gbnf, texts[i]);
    // After the first round every get is a hit on the one cached entry.
    CHECK(seen[0].back() != nullptr);
    CHECK(seen[0][seen[0].size() - texts.size() + i] == expected);
    CHECK(seen[1][seen[1].size() - texts.size() + i] == expected);
  }
}

TEST_CASE("mask_logits sends disallowed ids, and ids past the mask, to -infinity") {
  g::TokenBitset allowed(70);
  allowed.set(1);
  allowed.set(64);
  std::vector<float> logits(72, 0.5f);
  g::mask_logits(logits, allowed);
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i == 1 || i == 64) {
      CHECK(logits[i] == 0.5f);
    } else {
      CHECK(std::isinf(logits[i]));
      CHECK(logits[i] < 0);
    }
  }
}
