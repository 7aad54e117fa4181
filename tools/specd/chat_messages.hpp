#pragma once
// `specd generate --chat`: the conversation from the command line (--system,
// --prompt) or from an OpenAI-style messages file, parsed here at the edge into
// engine structs.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/tokenizer/chat_template.hpp"

namespace specd::cli {

// Reads [{"role": "...", "content": "..."}, ...] or {"messages": [...]}. Throws
// SpecdError naming the file: missing_file, malformed_json, bad_value (not a
// non-empty list of messages with string role and content).
std::vector<ChatMessage> read_messages_file(const std::filesystem::path& file);

// An optional system message, then the user's prompt.
std::vector<ChatMessage> prompt_messages(const std::string& system, bool has_system, const std::string& prompt);

}  // namespace specd::cli
