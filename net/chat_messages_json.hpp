#pragma once
// The OpenAI `messages` array read into the engine's ChatMessage values, with the
// gateway's rules (roles system, user, assistant and tool, developer as system; content
// a string or text parts; assistant tool_calls and a tool's tool_call_id), and the
// `tools` array checked and kept as JSON text for the chat template.
// Used inside a json_fields parse (throws json_fields::Refusal). Any thread.
#include <string>
#include <vector>

#include "engine/tokenizer/chat_template.hpp"
#include "net/json_fields.hpp"
#include "net/protocol.hpp"

namespace specd::net {

void read_messages(json_fields::element e, std::vector<ChatMessage>& messages, const ProtocolLimits& limits);
// The tools as minified JSON (an array of {"type":"function","function":{"name",...}}),
// "" for an empty array.
std::string read_tools(json_fields::element e);

}  // namespace specd::net
