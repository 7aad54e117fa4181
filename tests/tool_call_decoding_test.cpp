// tool_choice "required" and a named function inside the speculative round: under the
// call grammar of net/tool_call_grammar (GBNF with the tools' schemas as %json-schema
// rules), greedy output is the same token for token with and without speculation (K 1
// and 4, trees, the lookup drafter, batches) and equal to a target-only reference that
// masks by hand, and every answer that ends parses into calls of the offered tools
// whose arguments the schemas admit. In-memory models over a byte-level vocabulary, as
// structured_output_test.
#include "tests/support/doctest_torch.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/stream_parser.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/gbnf_parser.hpp"
#include "engine/grammar/grammar_cache.hpp"
#include "net/tool_call_grammar.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/grammar_pair.hpp"
#include "tests/support/spec_pairs.hpp"

using namespace specd;
using namespace specd::testing;
using net::ToolCallFormat;
using net::ToolChoice;

namespace {

constexpr int32_t kEos = kAsciiEos;
constexpr int64_t kMaxSeq = 256;

// Closed schemas: once a call closes only EOS (or, when parallel, another call) is left.
constexpr std::string_view kTools =
    R"([{"type":"function","function":{"name":"w","parameters":{"type":"object","properties":)"
    R"({"c":{"enum":["r","g"]},"n":{"type":"boolean"}},"required":["c","n"],"additionalProperties":false}}},)"
    R"({"type":"function","function":{"name":"t","parameters":{"type":"object","properties":)"
    R"({"z":{"type":"string","maxLength":3}},"required":["z"],"additionalProperties":false}}}])";

std::shared_ptr<const grammar::CompiledGrammar> tool_grammar(ToolCallFormat format, const ToolChoice& choice) {
  return grammar::compile_grammar(grammar::GrammarKind::gbnf, net::tool_call_grammar(format, kTools, choice),
                                  ascii_vocabulary());
}

// An answer that ended: its calls, each of an offered tool with arguments its schema
// admits, the parse's arguments exactly the text's (minified).
size_t check_calls(ToolCallFormat format, const std::vector<int32_t>& tokens, const std::string& only) {
  if (tokens.empty() || tokens.back() != kEos) return 0;  // cut at max_tokens: checked token by token
  const std::string text = ascii_text(tokens);
  const net::ParsedOutput parsed = net::parse_tool_calls(net::forced_call_format(format), text);
  CAPTURE(text);
  CHECK(parsed.content.empty());
  REQUIRE(!parsed.calls.empty());
  const std::string key = format == ToolCallFormat::llama3_json ? "\"parameters\": " : "\"arguments\": ";
  size_t pos = 0;
  for (const net::ParsedToolCall& call : parsed.calls) {
    // The arguments parsed back are exactly the value the text holds.
    pos = text.find(key, pos);
    REQUIRE(pos != std::string::npos);
    pos += key.size();
    boost::json::stream_parser value;
    boost::system::error_code ec;
    pos += value.write_some(text.data() + pos, text.size() - pos, ec);
    REQUIRE(value.done());
    CHECK(boost::json::parse(call.arguments) == value.release());
    if (!only.empty()) CHECK(call.name == only);
    const boost::json::object args = boost::json::parse(call.arguments).as_object();
    if (call.name == "w") {
      CHECK(args.size() == 2);
      CHECK((args.at("c") == "r" || args.at("c") == "g"));
      CHECK(args.at("n").is_bool());
    } else {
      REQUIRE(call.name == "t");
      CHECK(args.size() == 1);
      CHECK(args.at("z").as_string().size() <= 3);
    }
  }
  return parsed.calls.size();
}

}  // namespace

TEST_CASE("greedy under the tool-call grammar: identical with and without speculation, per family and choice") {
  TestPair pair = make_pair(true, 6, kMaxSeq);
  const auto prompts = mixed_prompts();
  struct Case {
    ToolCallFormat format;
    ToolChoice choice;
  };
  const std::vector<Case> cases{{ToolCallFormat::hermes, {ToolChoice::Mode::required, {}, false}},
                                {ToolCallFormat::hermes, {ToolChoice::Mode::function, "t", true}},
                                {ToolCallFormat::llama3_json, {ToolChoice::Mode::required, {}, true}},
                                {ToolCallFormat::mistral, {ToolChoice::Mode::required, {}, false}}};
  size_t calls = 0;
  for (const Case& c : cases) {
    CAPTURE(net::tool_call_format_name(c.format));
    const auto grammar = tool_grammar(c.format, c.choice);
    for (int variant = 0; variant < kExactnessSpecs; ++variant) {
      CAPTURE(variant);
      std::vector<DriverRequest> reqs;
      for (int i = 0; i < 3; ++i) {
        DriverRequest r;
        r.prompt = prompts[static_cast<size_t>(i + 2)];
        r.max_tokens = 110;
        r.eos_ids = {kEos};
        r.grammar = grammar;
        r.spec = exactness_spec(variant, static_cast<size_t>(i));
        reqs.push_back(std::move(r));
      }
      SpecModels models = pair.models();
      const auto results = generate_speculative(models, reqs, nullptr);
      for (size_t i = 0; i < results.size(); ++i) {
        CAPTURE(i);
        CHECK(results[i].tokens == target_only_reference(pair, reqs[i], kMaxSeq));
        calls += check_calls(c.format, results[i].tokens, c.choice.function);
        if (variant > 0 && variant < 4) CHECK(results[i].stats.drafted > 0);
      }
    }
  }
  MESSAGE(calls << " calls in answers that ended");
  CHECK(calls >= 30);  // most answers end in calls within max_tokens
}
