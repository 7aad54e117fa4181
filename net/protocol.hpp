#pragma once
// The gateway's client protocol, parsed at the edge into native structs: WebSocket
// messages (DESIGN.md "Wire protocol": generate, cancel) and the bodies of the
// OpenAI-style routes (/v1/completions, /v1/chat/completions). Torch-free and links
// no Beast code (simdjson, and Boost.JSON for the error frame), so the fuzz target
// links just this. Pure functions; any thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/request/generate_request.hpp"
#include "net/tool_call_grammar.hpp"
#include "net/wire_error.hpp"

namespace specd::net {

// Bounds on what a client may send (from the gateway config). Values are checked
// against the engine's own limits by the engine (validate_request).
struct ProtocolLimits {
  int32_t max_tokens_limit = 4096;  // largest max_tokens a request may ask for
  int32_t default_max_tokens = 0;   // 0: the rest of the context (max_seq_len less the prompt), as vLLM
  double default_temperature = 1.0;
  size_t max_stop_strings = 8;
  size_t max_logit_bias = 300;  // entries of logit_bias (OpenAI's bound)
  size_t max_messages = 256;
  size_t max_id_bytes = 128;
  int32_t max_n = 8;  // choices per OpenAI request (`n`)
};

// One generation as a client asked for it (WebSocket or HTTP): the engine's request
// value, with the fields only HTTP responses use.
struct GenerateParams {
  GenerateRequest request;  // request.id: the client's id (WebSocket); empty for HTTP
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string model;
  // OpenAI's `n`: choices generated for the one prompt (net/openai_stream.cpp), each its
  // own engine request seeded with choice_seed(request.sampling.seed, index).
  int32_t n = 1;
  // Chat with tools and tool_choice "auto", "required" or a function: the answer is
  // parsed for tool calls (net/tool_calls.hpp). For "required" and a function the
  // gateway adds the grammar of the calls (net/tool_call_grammar.hpp), so one always parses.
  bool parse_tool_calls = false;
  ToolChoice tool_choice;
};

struct CancelMessage {
  std::string id;
};

// A refused input: the error code and message a client gets back, with the request id
// when the input named one.
struct ProtocolError {
  WireCode code;
  std::string message;
  std::optional<std::string> id;
};

using ClientMessage = std::variant<ProtocolError, GenerateParams, CancelMessage>;

// A WebSocket text frame from a client.
ClientMessage parse_client_message(std::string_view text, const ProtocolLimits& limits);

enum class OpenAiRoute { completions, chat_completions };
// The body of POST /v1/completions or /v1/chat/completions.
std::variant<ProtocolError, GenerateParams> parse_openai_body(std::string_view body, OpenAiRoute route,
                                                              const ProtocolLimits& limits);

// An OpenAI-style conversation: a `messages` array, or an object holding one (a file
// for `specd generate --messages`), with the gateway's rules (roles system, user,
// assistant, and developer as system; content a string or text parts).
std::variant<ProtocolError, std::vector<ChatMessage>> parse_chat_messages(std::string_view json,
                                                                          const ProtocolLimits& limits);

// The seed of choice `index` of a request seeded `seed`: choice 0 keeps it (so n = 1 and
// the first of n choices agree), the others get distinct streams derived from it.
uint64_t choice_seed(uint64_t seed, int32_t index);

// Whether `text` is valid UTF-8.
bool valid_utf8(std::string_view text);

// {"type":"error","id":...|null,"code":"...","message":"..."}
std::string error_frame(const ProtocolError& error);

}  // namespace specd::net
