// Grammars in the actor engine on the committed default pair: a grammar too ambiguous to
// follow ends its own request with bad_value while a request batched with it keeps its
// solo tokens; the compiled-grammar budget in bytes; a schema compiling on the grammar
// thread does not hold back a plain request submitted right after it.
#include "tests/support/doctest_torch.hpp"

#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "engine/grammar/grammar_cache.hpp"
#include "engine/grammar/token_vocabulary.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/engine_runner.hpp"
#include "tests/support/serving_reference.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

const std::filesystem::path kModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";

EngineConfig default_config() {
  EngineConfig c;
  c.target_dir = kModels / "target";
  c.draft_dir = kModels / "draft";
  c.max_batch = 8;
  c.sequence.max_seq_len = 256;
  c.calibration_seconds = 0;
  return c;
}

using Clock = std::chrono::steady_clock;

struct Collector {
  std::mutex mutex;
  std::string streamed;
  std::optional<Clock::time_point> first_burst;
  Clock::time_point done_at;
  std::promise<GenerateResult> done;
  BurstHandler on_burst() {
    return [this](const Burst& b) {
      std::lock_guard lock(mutex);
      if (!first_burst) first_burst = Clock::now();
      streamed += b.text;
    };
  }
  DoneHandler on_done() {
    return [this](GenerateResult r) {
      done_at = Clock::now();
      done.set_value(std::move(r));
    };
  }
};

// Each "x" opens a parse with or without a pending "y" (the grammar_gbnf_test grammar),
// and the first 24 bytes can only be "x": past 13 of them more than 10,000 parses are open.
constexpr const char* kAmbiguous = "root ::= a\na ::= \"x\" a | \"x\" a \"y\" | \"xxxxxxxxxxxxxxxxxxxxxxxxz\"";

}  // namespace

TEST_CASE("a grammar past the parse bound ends its own request; the batch keeps its solo tokens") {
  IoThreads io(2);
  Engine engine(io.io().get_executor(), default_config());
  for (const bool speculate : {false, true}) {
    CAPTURE(speculate);
    Collector plain, ambiguous;
    GenerateRequest p;
    p.prompt = "ROMEO:\n";
    p.max_tokens = 80;
    p.ignore_eos = true;  // still running when the other one fails
    p.spec.enabled = speculate;
    const GenerateResult solo = io.run(engine.generate(p));
    REQUIRE(solo.token_ids.size() == 80);
    GenerateRequest a = p;
    a.prompt = "JULIET:\n";
    a.ignore_eos = false;
    a.grammar = {OutputGrammar::Kind::gbnf, kAmbiguous};
    // Submitted together: admitted together and batched in the same rounds.
    RequestHandle ha = engine.submit(a, ambiguous.on_burst(), ambiguous.on_done());
    RequestHandle hp = engine.submit(p, plain.on_burst(), plain.on_done());
    const GenerateResult bad = ambiguous.done.get_future().get();
    REQUIRE(bad.error.has_value());
    CHECK(bad.error->code == ErrorCode::bad_value);
    CHECK(bad.error->message == "the grammar is too ambiguous: more than 10000 parses are open at once");
    CHECK(bad.finish_reason == FinishReason::error);
    // What it streamed before the error followed the grammar: 13 "x" at most.
    CHECK(ambiguous.streamed.size() <= 13);
    CHECK(ambiguous.streamed.find_first_not_of('x') == std::string::npos);
    const GenerateResult good = plain.done.get_future().get();
    REQUIRE_FALSE(good.error.has_value());
    CHECK(good.token_ids == solo.token_ids);  // its tokens alone, before and after the failure
    CHECK(ambiguous.done_at < plain.done_at);
  }
  const EngineSnapshot s = io.run(engine.snapshot());
  CHECK(s.target_slots_in_use == 0);
  CHECK(s.draft_slots_in_use == 0);
  CHECK(s.requests_failed == 2);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("the grammar cache's budget is in bytes: printed, and a grammar above it is a bad_value") {
  IoThreads io(1);
  EngineConfig c = default_config();
  c.grammar_cache_memory = 4096;
  Engine engine(io.io().get_executor(), c);
  CHECK(engine.grammar_cache_summary() == "grammar cache 4.00 KiB ([engine] grammar_cache_memory)");
  GenerateRequest r;
  r.prompt = "ROMEO:\n";
  r.max_tokens = 8;
  r.grammar = {OutputGrammar::Kind::json_object, ""};
  Collector refused;
  RequestHandle h = engine.submit(r, refused.on_burst(), refused.on_done());
  const GenerateResult result = refused.done.get_future().get();
  REQUIRE(result.error.has_value());
  CHECK(result.error->code == ErrorCode::bad_value);
  CHECK(result.error->message.rfind("the compiled grammar takes ", 0) == 0);
  CHECK(result.error->message.find(", more than the whole grammar cache (4.00 KiB, [engine] grammar_cache_memory)") !=
        std::string::npos);
  CHECK(refused.streamed.empty());
  io.run(engine.stop(std::chrono::seconds(5)));
}

namespace {

// An object of `n` required string properties: its compile time grows with n.
std::string wide_schema(int n) {
  std::string props, required;
  for (int i = 0; i < n; ++i) {
    const std::string name = "field_" + std::to_string(i);
    props += (i ? "," : "") + ("\"" + name + "\":{\"type\":\"string\",\"maxLength\":12}");
    required += (i ? "," : "") + ("\"" + name + "\"");
  }
  return R"({"type":"object","properties":{)" + props + R"(},"required":[)" + required +
         R"(],"additionalProperties":false})";
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

TEST_CASE("a heavy schema compiling off the io thread does not delay a plain request submitted after it") {
  // The compile time of the schema, measured here as the engine compiles it (same
  // vocabulary), grown until it takes at least half a second.
  const auto tokenizer = load_tokenizer(kModels / "target");
  const std::filesystem::path json = kModels / "target" / "tokenizer.json";  // as Engine::Impl::compile_grammar
  const std::vector<int32_t> specials =
      std::filesystem::is_regular_file(json) ? grammar::special_ids_from_tokenizer_json(json) : std::vector<int32_t>{};
  const auto vocabulary =
      std::make_shared<const grammar::TokenVocabulary>(grammar::vocabulary_from_tokenizer(*tokenizer, specials));
  std::string schema;
  double compile_seconds = 0;
  for (int n = 32; compile_seconds < 0.4; n = n * 5 / 4) {
    const std::string wider = wide_schema(n);
    const auto start = Clock::now();
    try {
      grammar::compile_grammar(grammar::GrammarKind::json_schema, wider, vocabulary);
    } catch (const SpecdError& e) {  // past the grammar engine's state limit: keep the last that compiled
      MESSAGE(n << " properties: " << e.message());
      break;
    }
    compile_seconds = seconds_between(start, Clock::now());
    schema = wider;
    MESSAGE(n << " properties compile in " << compile_seconds << " s");
  }
  REQUIRE(compile_seconds >= 0.2);

  IoThreads io(1);
  Engine engine(io.io().get_executor(), default_config());
  GenerateRequest plain;
  plain.prompt = "ROMEO:\n";
  plain.max_tokens = 4;
  io.run(engine.generate(plain));  // warm: the lanes and the first request's costs
  GenerateRequest heavy = plain;
  heavy.prompt = "JULIET:\n";
  heavy.grammar = {OutputGrammar::Kind::json_schema, schema};  // not compiled by this engine yet
  Collector h, p;
  // Both from this one thread, as a gateway io thread submits: the plain request's first
  // token must not wait for the schema.
  const auto submitted = Clock::now();
  RequestHandle hh = engine.submit(heavy, h.on_burst(), h.on_done());
  const double submit_seconds = seconds_between(submitted, Clock::now());
  RequestHandle hp = engine.submit(plain, p.on_burst(), p.on_done());
  const GenerateResult plain_result = p.done.get_future().get();
  REQUIRE_FALSE(plain_result.error.has_value());
  REQUIRE(p.first_burst.has_value());
  const double ttft = seconds_between(submitted, *p.first_burst);
  MESSAGE("submit returned in " << submit_seconds << " s; the plain request's first token after " << ttft
                                << " s; the schema compiles in " << compile_seconds << " s");
  CHECK(submit_seconds < 0.1 * compile_seconds);
  CHECK(ttft < 0.5 * compile_seconds);
  const GenerateResult heavy_result = h.done.get_future().get();
  CHECK_FALSE(heavy_result.error.has_value());
  const size_t start = heavy_result.text.find_first_not_of(" \t\n");
  REQUIRE(start != std::string::npos);
  CHECK(heavy_result.text[start] == '{');  // under the schema
  // A schema the engine cannot compile is still refused before any token (a 400 on HTTP).
  GenerateRequest bad = plain;
  bad.grammar = {OutputGrammar::Kind::json_schema, R"({"type":"object","minProperties":2})"};
  Collector b;
  RequestHandle hb = engine.submit(bad, b.on_burst(), b.on_done());
  const GenerateResult bad_result = b.done.get_future().get();
  REQUIRE(bad_result.error.has_value());
  CHECK(bad_result.error->code == ErrorCode::bad_value);
  CHECK_FALSE(b.first_burst.has_value());
  io.run(engine.stop(std::chrono::seconds(5)));
}
