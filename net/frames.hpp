#pragma once
// JSON the gateway sends: WebSocket frames (DESIGN.md "Wire protocol") and the OpenAI
// wire format of /v1/completions and /v1/chat/completions (SSE chunks and whole
// bodies), built from the engine's native structs. Pure functions; any thread.
#include <boost/json/value.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/engine.hpp"
#include "net/protocol.hpp"
#include "net/tool_calls.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

// {"type":"tokens","id":..,"text":..,"token_ids":[..],"pieces":[..],"drafted":n,"accepted":n}
std::string tokens_frame(std::string_view id, const Burst& burst);
// {"type":"done","id":..,"finish_reason":..,"usage":{..},"spec":{..},"timings":{..}}
std::string done_frame(std::string_view id, const GenerateResult& result);

// What an OpenAI response names: "chatcmpl-..."/"cmpl-..." id, creation time, model.
struct OpenAiIdentity {
  std::string id;
  int64_t created = 0;  // Unix seconds
  std::string model;
  bool chat = false;
  int64_t choice = 0;  // the `index` of the choice a chunk or body carries (n > 1)
};

// choices[].logprobs of these tokens in the route's format: chat's {"content": [{token,
// logprob, bytes, top_logprobs}]}, or completions' {tokens, token_logprobs,
// top_logprobs, text_offset} with offsets counted on from `text_offset`, which is
// advanced past the tokens' bytes. A token that is not whole UTF-8 is named as OpenAI
// names it ("bytes:\xe2\x80"); `bytes` always holds it exactly.
boost::json::value openai_logprobs(const OpenAiIdentity& who, std::span<const TokenLogprobs> tokens,
                                   int64_t& text_offset);

// One `chat.completion.chunk` / `text_completion` chunk carrying `text` (and its
// tokens' logprobs when the request asked: null otherwise). The first chat chunk also
// carries the assistant role.
std::string openai_text_chunk(const OpenAiIdentity& who, std::string_view text, bool first,
                              boost::json::value logprobs = nullptr);
// The last chunk: empty delta (or text ""), finish_reason set.
std::string openai_finish_chunk(const OpenAiIdentity& who, FinishReason reason);
// stream_options.include_usage: choices [] and the usage.
std::string openai_usage_chunk(const OpenAiIdentity& who, const Usage& usage);
// The last chunk with OpenAI's finish_reason by name ("tool_calls").
std::string openai_finish_chunk(const OpenAiIdentity& who, const char* finish_reason);
// The whole response of a stream:false request.
std::string openai_body(const OpenAiIdentity& who, const GenerateResult& result);
// A chat answer that called tools: message.content (null when there is none),
// message.tool_calls with ids, finish_reason "tool_calls" ("length" when max_tokens cut
// the answer after its calls).
std::string openai_tool_calls_body(const OpenAiIdentity& who, const GenerateResult& result, const ParsedOutput& parsed);
// The chunks that stream tool calls as OpenAI streams them, one per delta: a call's head
// (index, id, type "function", function.name, arguments "") and then pieces of its
// function.arguments (index only besides). The first carries the assistant role and a
// null content when `first`.
std::vector<std::string> openai_tool_call_chunks(const OpenAiIdentity& who, const std::vector<ToolCallDelta>& deltas,
                                                 bool first);
// {"error":{"message":..,"type":..,"param":null,"code":..}}
std::string openai_error_body(WireCode code, std::string_view message);

// The usage of n choices of one prompt: the prompt (and its cached tokens) once, every
// choice's completion tokens.
Usage choices_usage(const std::vector<GenerateResult>& results);
// One body of n finished choices: each body (openai_body or openai_tool_calls_body of an
// identity whose `choice` is its index) gives its choice; usage as choices_usage, the
// speculation counts summed.
std::string openai_choices_body(const std::vector<std::string>& bodies, const std::vector<GenerateResult>& results);

// OpenAI's finish_reason for ours ("stop", "length"; a cancelled request reports "cancelled").
const char* openai_finish_reason(FinishReason reason);

}  // namespace specd::net
