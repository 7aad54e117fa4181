#pragma once
// The bodies of the gateway's text utilities, parsed into native values: POST /tokenize
// (llama.cpp's {"content", "add_special"}; vLLM's {"prompt", "add_special_tokens"} or
// {"messages", "tools"}), POST /detokenize ({"tokens": [...]}) and POST /apply-template
// (a chat completion's messages and tools). Token ids are checked against the
// vocabulary by the route (net/utility_routes.hpp). Pure functions; any thread.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/tokenizer/chat_template.hpp"
#include "net/protocol.hpp"

namespace specd::net {

struct TokenizeBody {
  std::string text;                   // content or prompt; empty with messages
  std::vector<ChatMessage> messages;  // rendered through the chat template, then encoded
  std::string tools_json;             // the chat form's tools, a JSON array; empty: none
  bool chat = false;                  // messages given (an empty text is a valid text)
  // Whether BOS is added to a text: llama.cpp's add_special defaults to false, vLLM's
  // add_special_tokens to true; a chat's template writes its own.
  bool add_special = false;
};

// A conversation to render (POST /apply-template; the chat form of /tokenize).
struct ChatBody {
  std::vector<ChatMessage> messages;
  std::string tools_json;  // empty: none
};

std::variant<ProtocolError, TokenizeBody> parse_tokenize_body(std::string_view body, const ProtocolLimits& limits);
std::variant<ProtocolError, std::vector<int64_t>> parse_detokenize_body(std::string_view body);
std::variant<ProtocolError, ChatBody> parse_chat_body(std::string_view body, const ProtocolLimits& limits);

}  // namespace specd::net
