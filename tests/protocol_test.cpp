// The gateway's protocol parser (net/protocol): every bad input gets its exact error
// code and the request id when the message named one; good messages parse into the
// exact native values.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "net/protocol.hpp"

using namespace specd;
using namespace specd::net;

namespace {

ProtocolLimits limits() {
  ProtocolLimits l;
  l.max_tokens_limit = 512;
  l.default_max_tokens = 32;
  l.default_temperature = 0.0;
  l.max_stop_strings = 2;
  l.max_messages = 3;
  l.max_id_bytes = 8;
  return l;
}

ProtocolError refusal(std::string_view text) {
  ClientMessage m = parse_client_message(text, limits());
  REQUIRE(std::holds_alternative<ProtocolError>(m));
  return std::get<ProtocolError>(m);
}

GenerateParams generate(std::string_view text) {
  ClientMessage m = parse_client_message(text, limits());
  if (auto* e = std::get_if<ProtocolError>(&m)) FAIL_CHECK(e->message);
  REQUIRE(std::holds_alternative<GenerateParams>(m));
  return std::get<GenerateParams>(m);
}

WireCode code_of(std::string_view text) { return refusal(text).code; }

}  // namespace

TEST_CASE("a full generate message parses into exact native values") {
  GenerateParams p = generate(
      R"({"type":"generate","id":"r1","prompt":"ROMEO:","max_tokens":64,"temperature":0.7,"top_p":0.9,)"
      R"("top_k":40,"seed":7,"stop":["\n\n","END"],"repetition_penalty":1.1,"speculative":{"enabled":true,"k":5,"drafter":"lookup","tree":"3,1"}})");
  CHECK(p.request.id == "r1");
  CHECK(p.request.prompt == "ROMEO:");
  CHECK(p.request.messages.empty());
  CHECK(p.request.max_tokens == 64);
  CHECK(p.request.sampling.temperature == 0.7);
  CHECK(p.request.sampling.top_p == 0.9);
  CHECK(p.request.sampling.top_k == 40);
  CHECK(p.request.sampling.seed == 7);
  CHECK(p.request.sampling.repetition_penalty == 1.1);
  CHECK(p.request.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(p.request.spec.enabled);
  CHECK(p.request.spec.k == 5);
  CHECK_FALSE(p.request.spec.adaptive);  // a K the request names is kept
  CHECK(p.request.spec.drafter == DrafterKind::lookup);
  CHECK(p.request.spec.tree.mode == TreeMode::fixed);
  CHECK(p.request.spec.tree.widths == std::vector<int32_t>{3, 1});
}

TEST_CASE("defaults come from the limits; k auto is adaptive up to k_max") {
  GenerateParams p = generate(
      R"({"type":"generate","id":"a","messages":[{"role":"user","content":"hi"}],"speculative":{"k":"auto"}})");
  CHECK(p.request.max_tokens == 32);
  CHECK(p.request.sampling.temperature == 0.0);
  REQUIRE(p.request.messages.size() == 1);
  CHECK(p.request.messages[0].role == "user");
  CHECK(p.request.messages[0].content == "hi");
  CHECK(p.request.spec.adaptive);
  CHECK(p.request.spec.k_max == 0);  // the engine's bound, not a copy of it
  // Without speculative.k the planner chooses K too, on both protocols, except for a
  // seeded sample, which a fixed K keeps repeatable.
  CHECK(generate(R"({"type":"generate","id":"b","prompt":"x"})").request.spec.adaptive);
  CHECK(generate(R"({"type":"generate","id":"b","prompt":"x","seed":3})").request.spec.adaptive);  // greedy
  CHECK_FALSE(generate(R"({"type":"generate","id":"b","prompt":"x","seed":3,"temperature":1})").request.spec.adaptive);
  CHECK(generate(R"({"type":"generate","id":"b","prompt":"x","seed":3,"temperature":1,"speculative":{"k":"auto"}})")
            .request.spec.adaptive);
  auto http = parse_openai_body(R"({"prompt":"x"})", OpenAiRoute::completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(http));
  CHECK(std::get<GenerateParams>(http).request.spec.adaptive);
}

TEST_CASE("a request without a seed draws a fresh one, on both protocols; a given seed is kept") {
  std::set<uint64_t> seeds;
  for (int i = 0; i < 3; ++i) {
    seeds.insert(generate(R"({"type":"generate","id":"r1","prompt":"x","temperature":1})").request.sampling.seed);
    auto http = parse_openai_body(R"({"prompt":"x","temperature":1})", OpenAiRoute::completions, limits());
    REQUIRE(std::holds_alternative<GenerateParams>(http));
    seeds.insert(std::get<GenerateParams>(http).request.sampling.seed);
  }
  CHECK(seeds.size() == 6);  // 64 random bits each: a repeat has probability ~1e-18
  CHECK(generate(R"({"type":"generate","id":"r1","prompt":"x","seed":0})").request.sampling.seed == 0);
  auto seeded = parse_openai_body(R"({"prompt":"x","seed":42})", OpenAiRoute::completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(seeded));
  CHECK(std::get<GenerateParams>(seeded).request.sampling.seed == 42);
}

TEST_CASE("cancel parses its id") {
  ClientMessage m = parse_client_message(R"({"type":"cancel","id":"r9"})", limits());
  REQUIRE(std::holds_alternative<CancelMessage>(m));
  CHECK(std::get<CancelMessage>(m).id == "r9");
}

TEST_CASE("malformed JSON, non-objects and invalid UTF-8") {
  CHECK(code_of("{") == ErrorCode::malformed_json);
  CHECK(code_of("") == ErrorCode::malformed_json);
  CHECK(code_of(R"({"type":"generate",})") == ErrorCode::malformed_json);
  CHECK(code_of(R"({"type":"generate","temperature":NaN})") == ErrorCode::malformed_json);
  CHECK(code_of("[1,2]") == ErrorCode::bad_value);
  CHECK(code_of("\"generate\"") == ErrorCode::bad_value);
  CHECK(code_of("{\"type\":\"generate\",\"id\":\"r1\",\"prompt\":\"\xff\xfe\"}") == GatewayCode::invalid_utf8);
  CHECK(refusal("{").id == std::nullopt);
}

TEST_CASE("unknown type and missing fields; the id is echoed when the message has one") {
  ProtocolError e = refusal(R"({"type":"subscribe","id":"r2"})");
  CHECK(e.code == GatewayCode::unknown_type);
  CHECK(e.id == std::optional<std::string>("r2"));
  CHECK(code_of(R"({"id":"r1","prompt":"x"})") == ErrorCode::missing_field);
  CHECK(code_of(R"({"type":"generate","prompt":"x"})") == ErrorCode::missing_field);
  CHECK(code_of(R"({"type":"cancel"})") == ErrorCode::missing_field);
  ProtocolError no_input = refusal(R"({"type":"generate","id":"r3"})");
  CHECK(no_input.code == ErrorCode::missing_field);
  CHECK(no_input.id == std::optional<std::string>("r3"));
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","messages":[{"role":"user","content":"y"}]})") ==
        ErrorCode::bad_value);
}

TEST_CASE("wrong types are bad_value") {
  CHECK(code_of(R"({"type":7,"id":"r1","prompt":"x"})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":5,"prompt":"x"})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":["x"]})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","max_tokens":"8"})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","max_tokens":8.5})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","temperature":"hot"})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","stop":[1]})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","speculative":true})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","prompt":"x","speculative":{"enabled":1}})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","messages":[{"role":"user","content":3}]})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","messages":"hi"})") == ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","messages":[{"role":"narrator","content":"x"}]})") ==
        ErrorCode::bad_value);
  CHECK(code_of(R"({"type":"generate","id":"r1","messages":[{"content":"x"}]})") == ErrorCode::missing_field);
}

TEST_CASE("values beyond the gateway's bounds are bad_value (the engine judges the rest: generate_request_test)") {
  const char* bad[] = {
      R"({"type":"generate","id":"r1","prompt":"x","max_tokens":0})",
      R"({"type":"generate","id":"r1","prompt":"x","max_tokens":-5})",
      R"({"type":"generate","id":"r1","prompt":"x","max_tokens":513})",
      R"({"type":"generate","id":"r1","prompt":"x","max_tokens":18446744073709551615})",
      R"({"type":"generate","id":"r1","prompt":"x","seed":-1})",
      R"({"type":"generate","id":"r1","prompt":"x","speculative":{"k":"fast"}})",
      R"({"type":"generate","id":"r1","prompt":"x","speculative":{"drafter":"magic"}})",
      R"({"type":"generate","id":"r1","prompt":"x","speculative":{"tree":"wide"}})",
      R"({"type":"generate","id":"r1","prompt":"x","speculative":{"tree":"9,9,9"}})",
      R"({"type":"generate","id":"r1","prompt":"x","stop":["a","b","c"]})",
      R"({"type":"generate","id":"","prompt":"x"})",
      R"({"type":"generate","id":"123456789","prompt":"x"})",
      R"({"type":"generate","id":"r1","messages":[]})",
      R"({"type":"generate","id":"r1","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"},{"role":"user","content":"d"}]})",
  };
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK(code_of(text) == ErrorCode::bad_value);
  }
}

TEST_CASE("an infinite temperature literal is refused (JSON has no infinity; 1e999 overflows)") {
  const WireCode code = code_of(R"({"type":"generate","id":"r1","prompt":"x","temperature":1e999})");
  CHECK((code == ErrorCode::malformed_json || code == ErrorCode::bad_value));
}

TEST_CASE("OpenAI chat body: messages with text parts, max_completion_tokens, stream options") {
  auto r = parse_openai_body(
      R"({"model":"m","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi "},{"type":"text","text":"there"}]}],)"
      R"("max_completion_tokens":9,"stream":true,"stream_options":{"include_usage":true},"n":1,"temperature":0,"user":"ignored"})",
      OpenAiRoute::chat_completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(r));
  const GenerateParams& p = std::get<GenerateParams>(r);
  REQUIRE(p.request.messages.size() == 2);
  CHECK(p.request.messages[0].role == "system");
  CHECK(p.request.messages[1].content == "Hi there");
  CHECK(p.request.max_tokens == 9);
  CHECK(p.stream);
  CHECK(p.include_usage);
  CHECK(p.model == "m");
  CHECK(p.request.sampling.temperature == 0.0);
}

TEST_CASE("chat history with tools: assistant tool_calls and tool turns parse; tools kept as JSON for the template") {
  auto r = parse_openai_body(
      R"({"messages":[{"role":"user","content":"Weather?"},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Verona\"}"}}]},)"
      R"({"role":"tool","tool_call_id":"call_1","content":"Fair"}],)"
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"parallel_tool_calls":true})",
      OpenAiRoute::chat_completions, limits());
  if (auto* e = std::get_if<ProtocolError>(&r)) FAIL(e->message);
  const GenerateParams& p = std::get<GenerateParams>(r);
  REQUIRE(p.request.messages.size() == 3);
  const ChatMessage& call = p.request.messages[1];
  CHECK(call.content.empty());
  REQUIRE(call.tool_calls.size() == 1);
  CHECK(call.tool_calls[0].id == "call_1");
  CHECK(call.tool_calls[0].name == "get_weather");
  CHECK(call.tool_calls[0].arguments == R"({"city": "Verona"})");
  CHECK(p.request.messages[2].role == "tool");
  CHECK(p.request.messages[2].tool_call_id == "call_1");
  CHECK(p.request.messages[2].content == "Fair");
  CHECK(p.request.tools_json ==
        R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])");
  CHECK(p.parse_tool_calls);  // tool_choice auto by default

  auto none = parse_openai_body(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"none",)"
                                R"("tools":[{"type":"function","function":{"name":"f"}}]})",
                                OpenAiRoute::chat_completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(none));
  CHECK_FALSE(std::get<GenerateParams>(none).parse_tool_calls);
  CHECK_FALSE(std::get<GenerateParams>(none).request.tools_json.empty());  // still shown to the model
  auto no_tools =
      parse_openai_body(R"({"messages":[{"role":"user","content":"x"}]})", OpenAiRoute::chat_completions, limits());
  CHECK_FALSE(std::get<GenerateParams>(no_tools).parse_tool_calls);
}

TEST_CASE(
    "tool_choice: required, a named function and parallel_tool_calls read; malformed ones and bad tools refused") {
  auto parse = [](std::string_view extra, bool tools = true) {
    const std::string body = R"({"messages":[{"role":"user","content":"x"}],)" +
                             std::string(tools ? R"("tools":[{"type":"function","function":{"name":"f"}}],)" : "") +
                             std::string(extra) + "}";
    return parse_openai_body(body, OpenAiRoute::chat_completions, limits());
  };
  auto chosen = [&](std::string_view extra) {
    auto r = parse(extra);
    REQUIRE(std::holds_alternative<GenerateParams>(r));
    return std::get<GenerateParams>(r);
  };
  auto error = [&](std::string_view extra, bool tools = true) {
    auto r = parse(extra, tools);
    REQUIRE(std::holds_alternative<ProtocolError>(r));
    return std::get<ProtocolError>(r);
  };
  GenerateParams p = chosen(R"("tool_choice":"required")");
  CHECK(p.tool_choice.mode == ToolChoice::Mode::required);
  CHECK(p.tool_choice.parallel);
  CHECK(p.parse_tool_calls);
  CHECK(p.request.grammar.kind == OutputGrammar::Kind::none);  // the gateway adds it, in the model's syntax
  p = chosen(R"("tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false)");
  CHECK(p.tool_choice.mode == ToolChoice::Mode::function);
  CHECK(p.tool_choice.function == "f");
  CHECK_FALSE(p.tool_choice.parallel);
  CHECK(p.parse_tool_calls);
  CHECK(chosen(R"("tool_choice":"auto")").tool_choice.mode == ToolChoice::Mode::automatic);

  CHECK(error(R"("tool_choice":"sometimes")").code == ErrorCode::bad_value);
  CHECK(error(R"("tool_choice":{"type":"code","function":{"name":"f"}})").code == ErrorCode::bad_value);
  CHECK(error(R"("tool_choice":{"type":"function"})").code == ErrorCode::missing_field);
  CHECK(error(R"("tool_choice":{"type":"function","function":{}})").code == ErrorCode::missing_field);
  ProtocolError e = error(R"("tool_choice":"required")", false);
  CHECK(e.code == ErrorCode::bad_value);
  CHECK(e.message == "tool_choice needs tools");
  CHECK(error(R"("tool_choice":"auto","parallel_tool_calls":1)").code == ErrorCode::bad_value);
  auto code = [](std::string_view body) {
    auto r = parse_openai_body(body, OpenAiRoute::chat_completions, limits());
    REQUIRE(std::holds_alternative<ProtocolError>(r));
    return std::get<ProtocolError>(r).code;
  };
  CHECK(code(R"({"messages":[{"role":"user","content":"x"}],"tools":{}})") == ErrorCode::bad_value);
  CHECK(code(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})") ==
        ErrorCode::missing_field);
  CHECK(code(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"code","function":{"name":"f"}}]})") ==
        ErrorCode::bad_value);
  CHECK(code(R"({"messages":[{"role":"tool"}]})") == ErrorCode::missing_field);  // a tool turn needs content
  CHECK(code(R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})") == ErrorCode::bad_value);
  CHECK(code(R"({"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{}}]}]})") ==
        ErrorCode::missing_field);
}

TEST_CASE("OpenAI completions body: a prompt or a one-string list; refusals") {
  auto ok = parse_openai_body(R"({"prompt":["ROMEO:"],"max_tokens":4})", OpenAiRoute::completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(ok));
  CHECK(std::get<GenerateParams>(ok).request.prompt == "ROMEO:");
  CHECK_FALSE(std::get<GenerateParams>(ok).stream);
  auto code = [](std::string_view body, OpenAiRoute route) {
    auto r = parse_openai_body(body, route, limits());
    REQUIRE(std::holds_alternative<ProtocolError>(r));
    return std::get<ProtocolError>(r).code;
  };
  CHECK(code(R"({"prompt":["a","b"]})", OpenAiRoute::completions) == ErrorCode::bad_value);
  CHECK(code(R"({"max_tokens":4})", OpenAiRoute::completions) == ErrorCode::missing_field);
  CHECK(code(R"({"prompt":"x"})", OpenAiRoute::chat_completions) == ErrorCode::missing_field);
  CHECK(code(R"({"prompt":"x","n":9})", OpenAiRoute::completions) == ErrorCode::bad_value);  // max_n 8
  CHECK(code(R"({"prompt":"x","n":0})", OpenAiRoute::completions) == ErrorCode::bad_value);
  CHECK(code(R"({"prompt":"x","stream":"yes"})", OpenAiRoute::completions) == ErrorCode::bad_value);
  CHECK(code(R"({"prompt":"x","max_tokens":100000})", OpenAiRoute::completions) == ErrorCode::bad_value);
  CHECK(code("not json", OpenAiRoute::completions) == ErrorCode::malformed_json);
  CHECK(code(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", OpenAiRoute::chat_completions) ==
        ErrorCode::bad_value);
}

TEST_CASE("a messages file: an array or an object holding one, with the gateway's rules") {
  auto ok = parse_chat_messages(
      R"({"messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]}]})",
      limits());
  REQUIRE(std::holds_alternative<std::vector<ChatMessage>>(ok));
  const auto& messages = std::get<std::vector<ChatMessage>>(ok);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].role == "system");
  CHECK(messages[1].content == "Hi");
  auto bare = parse_chat_messages(R"([{"role":"user","content":"x"}])", limits());
  REQUIRE(std::holds_alternative<std::vector<ChatMessage>>(bare));
  CHECK(std::get<std::vector<ChatMessage>>(bare).size() == 1);
  auto code = [](std::string_view json) {
    auto r = parse_chat_messages(json, limits());
    REQUIRE(std::holds_alternative<ProtocolError>(r));
    return std::get<ProtocolError>(r).code;
  };
  CHECK(code("[") == ErrorCode::malformed_json);
  CHECK(code(R"({"prompt":"x"})") == ErrorCode::missing_field);
  CHECK(code("[]") == ErrorCode::bad_value);
  CHECK(code(R"([{"role":"narrator","content":"x"}])") == ErrorCode::bad_value);
  CHECK(std::holds_alternative<std::vector<ChatMessage>>(
      parse_chat_messages(R"([{"role":"tool","tool_call_id":"c1","content":"x"}])", limits())));
  CHECK(code(R"([{"role":"user"}])") == ErrorCode::missing_field);
}

TEST_CASE("error frames carry the code name, the message and the id or null") {
  CHECK(error_frame({ErrorCode::duplicate_id, "request id 'r1' is already in flight", std::string("r1")}) ==
        R"({"type":"error","id":"r1","code":"duplicate_id","message":"request id 'r1' is already in flight"})");
  CHECK(error_frame({ErrorCode::malformed_json, "bad \"x\"\n", std::nullopt}) ==
        R"({"type":"error","id":null,"code":"malformed_json","message":"bad \"x\"\n"})");
  CHECK(error_frame({GatewayCode::unknown_id, "no request 'r9'", std::string("r9")}) ==
        R"({"type":"error","id":"r9","code":"unknown_id","message":"no request 'r9'"})");
}

TEST_CASE("min_p, penalties, logit_bias and logprobs parse on both protocols; bad ones are refused") {
  auto r = parse_openai_body(
      R"({"messages":[{"role":"user","content":"x"}],"min_p":0.05,"presence_penalty":0.5,"frequency_penalty":-0.25,)"
      R"("logit_bias":{"7":-100,"1234":2.5},"logprobs":true,"top_logprobs":3})",
      OpenAiRoute::chat_completions, limits());
  REQUIRE(std::holds_alternative<GenerateParams>(r));
  const SamplingParams& s = std::get<GenerateParams>(r).request.sampling;
  CHECK(s.min_p == 0.05);
  CHECK(s.presence_penalty == 0.5);
  CHECK(s.frequency_penalty == -0.25);
  CHECK(s.logit_bias == std::vector<std::pair<int32_t, float>>{{7, -100.0f}, {1234, 2.5f}});
  CHECK(s.logprobs == 3);
  auto sampling_of = [](std::string_view body, OpenAiRoute route) {
    auto parsed = parse_openai_body(body, route, limits());
    REQUIRE(std::holds_alternative<GenerateParams>(parsed));
    return std::get<GenerateParams>(parsed).request.sampling;
  };
  CHECK(sampling_of(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", OpenAiRoute::chat_completions)
            .logprobs == 0);
  CHECK(sampling_of(R"({"messages":[{"role":"user","content":"x"}],"logprobs":false})", OpenAiRoute::chat_completions)
            .logprobs == -1);
  CHECK(sampling_of(R"({"prompt":"x","logprobs":5})", OpenAiRoute::completions).logprobs == 5);
  CHECK(sampling_of(R"({"prompt":"x"})", OpenAiRoute::completions).logprobs == -1);
  CHECK(generate(R"({"type":"generate","id":"a","prompt":"x","logprobs":2,"min_p":0.1})").request.sampling.logprobs ==
        2);
  auto refused = [](std::string_view body, OpenAiRoute route) {
    auto parsed = parse_openai_body(body, route, limits());
    REQUIRE(std::holds_alternative<ProtocolError>(parsed));
    return std::get<ProtocolError>(parsed).message;
  };
  const auto chat = OpenAiRoute::chat_completions;
  CHECK(refused(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", chat) ==
        "top_logprobs needs logprobs: true");
  CHECK(refused(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", chat) ==
        "top_logprobs must be an integer in [0, 20], got 21");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"abc":1}})", OpenAiRoute::completions) ==
        "logit_bias: \"abc\" is not a token id");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"-3":1}})", OpenAiRoute::completions) ==
        "logit_bias: \"-3\" is not a token id");
  CHECK(refused(R"({"prompt":"x","logit_bias":{"3":"a"}})", OpenAiRoute::completions) ==
        "logit_bias[3] must be a number");
  CHECK(refused(R"({"prompt":"x","logit_bias":[1]})", OpenAiRoute::completions) ==
        "logit_bias must be an object of token ids to numbers");
  CHECK(refused(R"({"prompt":"x","min_p":"a"})", OpenAiRoute::completions) == "min_p must be a number");
}

TEST_CASE("n choices up to the limit on both OpenAI routes; each choice's seed derives from the request's") {
  auto n_of = [](std::string_view body, OpenAiRoute route) {
    auto r = parse_openai_body(body, route, limits());
    REQUIRE(std::holds_alternative<GenerateParams>(r));
    return std::get<GenerateParams>(r).n;
  };
  CHECK(n_of(R"({"prompt":"x"})", OpenAiRoute::completions) == 1);
  CHECK(n_of(R"({"prompt":"x","n":8})", OpenAiRoute::completions) == 8);
  CHECK(n_of(R"({"messages":[{"role":"user","content":"hi"}],"n":3})", OpenAiRoute::chat_completions) == 3);
  auto r = parse_openai_body(R"({"prompt":"x","n":9})", OpenAiRoute::completions, limits());
  REQUIRE(std::holds_alternative<ProtocolError>(r));
  CHECK(std::get<ProtocolError>(r).message == "n must be an integer in [1, 8], got 9");
  ProtocolLimits two = limits();
  two.max_n = 2;
  CHECK(std::holds_alternative<ProtocolError>(
      parse_openai_body(R"({"prompt":"x","n":3})", OpenAiRoute::completions, two)));
  // Choice 0 keeps the seed (n = 1 and the first of n agree); the others are distinct,
  // and not the seeds of neighbouring requests' first choices.
  CHECK(choice_seed(11, 0) == 11);
  std::set<uint64_t> seeds;
  for (uint64_t seed : {11ull, 12ull, 13ull})
    for (int32_t i = 0; i < 8; ++i) seeds.insert(choice_seed(seed, i));
  CHECK(seeds.size() == 24);
  CHECK(choice_seed(11, 3) == choice_seed(11, 3));
}
