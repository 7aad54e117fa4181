// The JSON the gateway sends (net/frames): WebSocket tokens/done frames and OpenAI's
// wire format, byte for byte.
#include <doctest/doctest.h>

#include "json/json_serialize.hpp"
#include "net/frames.hpp"

using namespace specd;
using namespace specd::net;

TEST_CASE("a tokens frame carries the client's id, text, ids, per-token pieces and the round's counts") {
  Burst b{"ws1:r1", {5, 6, 7}, "a\"b\n", 4, 2, {"a", "\"b", "\n"}};
  CHECK(
      tokens_frame("r1", b) ==
      R"({"type":"tokens","id":"r1","text":"a\"b\n","token_ids":[5,6,7],"pieces":["a","\"b","\n"],"drafted":4,"accepted":2})");
}

TEST_CASE("a done frame carries finish reason, usage, spec statistics and timings") {
  GenerateResult r;
  r.finish_reason = FinishReason::length;
  r.usage = {3, 4};
  r.spec.rounds = 2;
  r.spec.drafted = 8;
  r.spec.accepted = 2;
  r.spec.emitted = 4;
  r.spec.accepted_per_position = {2, 0};
  r.timings = {1.5, 2, 10, 400};
  CHECK(
      done_frame("r1", r) ==
      R"({"type":"done","id":"r1","finish_reason":"length","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}},)"
      R"("spec":{"rounds":2,"drafted":8,"accepted":2,"acceptance_rate":0.25,"tokens_per_round":2,"accepted_per_position":[2,0]},)"
      R"("timings":{"queued_ms":1.5,"first_token_ms":2,"total_ms":10,"tokens_per_second":400}})");
}

TEST_CASE("OpenAI chat chunks: the role in the first delta, an empty delta with the finish, usage last") {
  OpenAiIdentity who{"chatcmpl-7", 1700000000, "specd-tiny", true};
  CHECK(openai_text_chunk(who, "Hi", true) ==
        R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny",)"
        R"("choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]})");
  CHECK(openai_text_chunk(who, "!", false) ==
        R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny",)"
        R"("choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null}]})");
  CHECK(openai_finish_chunk(who, FinishReason::stop) ==
        R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny",)"
        R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]})");
  CHECK(openai_usage_chunk(who, {5, 2, 3}) ==
        R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny",)"
        R"("choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,)"
        R"("prompt_tokens_details":{"cached_tokens":3}}})");
}

TEST_CASE("OpenAI text completion chunk and whole bodies") {
  OpenAiIdentity who{"cmpl-3", 1700000000, "m", false};
  CHECK(openai_text_chunk(who, "x", true) ==
        R"({"id":"cmpl-3","object":"text_completion","created":1700000000,"model":"m",)"
        R"("choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":null}]})");
  GenerateResult r;
  r.text = "ok";
  r.finish_reason = FinishReason::length;
  r.usage = {1, 1};
  const std::string body = openai_body(who, r);
  CHECK(
      body.rfind(
          R"({"id":"cmpl-3","object":"text_completion","created":1700000000,"model":"m",)"
          R"("choices":[{"index":0,"text":"ok","logprobs":null,"finish_reason":"length"}],)"
          R"("usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":0}})",
          0) == 0);
  OpenAiIdentity chat{"chatcmpl-3", 1700000000, "m", true};
  CHECK(openai_body(chat, r).find(R"("object":"chat.completion",)") != std::string::npos);
  CHECK(openai_body(chat, r).find(R"("message":{"role":"assistant","content":"ok"})") != std::string::npos);
}

TEST_CASE("OpenAI error bodies name the code and the error type") {
  CHECK(
      openai_error_body(ErrorCode::bad_value, "top_p must be in (0, 1]") ==
      R"({"error":{"message":"top_p must be in (0, 1]","type":"invalid_request_error","param":null,"code":"bad_value"}})");
  CHECK(openai_error_body(ErrorCode::overloaded, "full") ==
        R"({"error":{"message":"full","type":"server_error","param":null,"code":"overloaded"}})");
}

TEST_CASE("OpenAI tool calls: a whole answer's message.tool_calls, content null, finish_reason tool_calls") {
  OpenAiIdentity who{"chatcmpl-9", 1700000000, "specd-tiny", true};
  GenerateResult r;
  r.finish_reason = FinishReason::stop;
  r.usage = {10, 12};
  ParsedOutput parsed{"", {{"call_a", "get_weather", R"({"city":"Verona"})"}}};
  const std::string body = openai_tool_calls_body(who, r, parsed);
  CHECK(
      body.find(
          R"("choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[)"
          R"({"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Verona\"}"}}]},)"
          R"("logprobs":null,"finish_reason":"tool_calls"}])") != std::string::npos);
  parsed.content = "Looking.";
  CHECK(openai_tool_calls_body(who, r, parsed).find(R"("content":"Looking.","tool_calls")") != std::string::npos);
  r.finish_reason = FinishReason::length;  // cut after its calls, as the stream reports it
  CHECK(openai_tool_calls_body(who, r, parsed).find(R"("finish_reason":"length")") != std::string::npos);
}

TEST_CASE("OpenAI tool calls streamed: per call a head delta (index, id, type, name) then argument pieces") {
  OpenAiIdentity who{"chatcmpl-9", 1700000000, "specd-tiny", true};
  const std::vector<ToolCallDelta> deltas{
      {0, "call_a", "f", ""}, {0, "", "", "{}"}, {1, "call_b", "g", ""}, {1, "", "", R"({"x")"}, {1, "", "", ":1}"}};
  const std::vector<std::string> chunks = openai_tool_call_chunks(who, deltas, true);
  REQUIRE(chunks.size() == 5);
  const std::string head =
      R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny","choices":[{"index":0,"delta":)";
  const std::string tail = R"(,"logprobs":null,"finish_reason":null}]})";
  CHECK(
      chunks[0] ==
      head +
          R"({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]})" +
          tail);
  CHECK(chunks[1] == head + R"({"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]})" + tail);
  CHECK(chunks[2] ==
        head +
            R"({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":""}}]})" +
            tail);
  CHECK(chunks[3] == head + R"({"tool_calls":[{"index":1,"function":{"arguments":"{\"x\""}}]})" + tail);
  CHECK(chunks[4] == head + R"({"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]})" + tail);
  // Not the first chunk of the answer: no role.
  const std::vector<std::string> later = openai_tool_call_chunks(who, {{2, "call_c", "f", ""}}, false);
  CHECK(later[0] ==
        head +
            R"({"tool_calls":[{"index":2,"id":"call_c","type":"function","function":{"name":"f","arguments":""}}]})" +
            tail);
  CHECK(openai_finish_chunk(who, "tool_calls") ==
        R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":1700000000,"model":"specd-tiny",)"
        R"("choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]})");
}

TEST_CASE("OpenAI logprobs: chat's content entries, completions' parallel lists, bytes for partial UTF-8") {
  std::vector<TokenLogprobs> tokens{{{5, -0.25f, "Hi"}, {{5, -0.25f, "Hi"}, {9, -1.5f, "Ho"}}},
                                    {{6, -2.0f, "\xe2\x80"}, {}}};
  OpenAiIdentity chat{"chatcmpl-1", 1700000000, "m", true};
  int64_t offset = 0;
  CHECK(serialize_json(openai_logprobs(chat, tokens, offset)) ==
        R"({"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[)"
        R"({"token":"Hi","logprob":-0.25,"bytes":[72,105]},{"token":"Ho","logprob":-1.5,"bytes":[72,111]}]},)"
        R"({"token":"bytes:\\xe2\\x80","logprob":-2,"bytes":[226,128],"top_logprobs":[]}]})");
  OpenAiIdentity completion{"cmpl-1", 1700000000, "m", false};
  offset = 10;
  CHECK(serialize_json(openai_logprobs(completion, tokens, offset)) ==
        R"({"tokens":["Hi","bytes:\\xe2\\x80"],"token_logprobs":[-0.25,-2],)"
        R"("top_logprobs":[{"Hi":-0.25,"Ho":-1.5},{}],"text_offset":[10,12]})");
  CHECK(offset == 14);
  Burst b{"ws1:r1", {5}, "Hi", 0, 0, {"Hi"}};
  b.logprobs = {tokens[0]};
  CHECK(tokens_frame("r1", b).find(R"("logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],)") !=
        std::string::npos);
  GenerateResult r;
  r.text = "Hi";
  r.logprobs = {tokens[0]};
  CHECK(openai_body(chat, r).find(R"("logprobs":{"content":[{"token":"Hi")") != std::string::npos);
}
