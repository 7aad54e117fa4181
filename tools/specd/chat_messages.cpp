#include "tools/specd/chat_messages.hpp"

#include <variant>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "net/protocol.hpp"

namespace specd::cli {

std::vector<ChatMessage> read_messages_file(const std::filesystem::path& file) {
  auto parsed = net::parse_chat_messages(read_whole_file(file, "messages file"), net::ProtocolLimits{});
  if (auto* error = std::get_if<net::ProtocolError>(&parsed)) {
    const ErrorCode* code = error->code.engine_code();
    throw SpecdError(code ? *code : ErrorCode::bad_value, file.string() + ": " + error->message);
  }
  return std::get<std::vector<ChatMessage>>(std::move(parsed));
}

std::vector<ChatMessage> prompt_messages(const std::string& system, bool has_system, const std::string& prompt) {
  std::vector<ChatMessage> messages;
  if (has_system) messages.push_back({"system", system});
  messages.push_back({"user", prompt});
  return messages;
}

}  // namespace specd::cli
