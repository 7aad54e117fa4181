#include "tools/specd/chat_messages.hpp"

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include "engine/base/errors.hpp"

namespace specd::cli {

std::vector<ChatMessage> read_messages_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SpecdError(ErrorCode::missing_file, "cannot read messages file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text.str(), ec);
  if (ec) throw SpecdError(ErrorCode::malformed_json, file.string() + ": " + ec.message());
  const auto bad = [&](const std::string& why) { return SpecdError(ErrorCode::bad_value, file.string() + ": " + why); };
  const boost::json::array* list = doc.if_array();
  if (const auto* object = doc.if_object(); object != nullptr && object->contains("messages")) {
    list = object->at("messages").if_array();
  }
  if (list == nullptr || list->empty()) throw bad("expected a non-empty list of messages (or {\"messages\": [...]})");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto* m = (*list)[i].if_object();
    const auto* role = m != nullptr && m->contains("role") ? m->at("role").if_string() : nullptr;
    const auto* content = m != nullptr && m->contains("content") ? m->at("content").if_string() : nullptr;
    if (role == nullptr || content == nullptr) {
      throw bad("message " + std::to_string(i) + " needs string \"role\" and \"content\"");
    }
    messages.push_back({std::string(*role), std::string(*content)});
  }
  return messages;
}

std::vector<ChatMessage> prompt_messages(const std::string& system, bool has_system, const std::string& prompt) {
  std::vector<ChatMessage> messages;
  if (has_system) messages.push_back({"system", system});
  messages.push_back({"user", prompt});
  return messages;
}

}  // namespace specd::cli
