#pragma once
// `specd generate --chat`: the conversation from the command line (--system,
// --prompt) or from an OpenAI-style messages file, read with the gateway's parser
// (net/protocol.hpp) so that a file the server accepts the CLI accepts too.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/tokenizer/chat_template.hpp"

namespace specd::cli {

// Reads [{"role": "...", "content": ...}, ...] or {"messages": [...]}. Throws
// SpecdError naming the file: missing_file, malformed_json, missing_field, bad_value.
std::vector<ChatMessage> read_messages_file(const std::filesystem::path& file);

// An optional system message, then the user's prompt.
std::vector<ChatMessage> prompt_messages(const std::string& system, bool has_system, const std::string& prompt);

}  // namespace specd::cli
