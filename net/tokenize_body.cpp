#include "net/tokenize_body.hpp"

#include "net/chat_messages_json.hpp"
#include "net/json_fields.hpp"

namespace specd::net {

using namespace json_fields;

namespace {

void read_chat(const object& o, std::vector<ChatMessage>& messages, std::string& tools_json,
               const ProtocolLimits& limits) {
  auto list = member(o, "messages");
  if (!list) refuse(ErrorCode::missing_field, "messages is required");
  read_messages(*list, messages, limits);
  if (auto tools = member(o, "tools")) tools_json = read_tools(*tools);
}

}  // namespace

std::variant<ProtocolError, TokenizeBody> parse_tokenize_body(std::string_view body, const ProtocolLimits& limits) {
  try {
    const object o = parse_object(parser(), body);
    TokenizeBody t;
    auto content = member(o, "content");
    auto prompt = member(o, "prompt");
    const bool chat = member(o, "messages").has_value();
    if (int(content.has_value()) + int(prompt.has_value()) + int(chat) != 1)
      refuse(content || prompt || chat ? ErrorCode::bad_value : ErrorCode::missing_field,
             "give one of content, prompt or messages");
    if (chat) {
      t.chat = true;
      read_chat(o, t.messages, t.tools_json, limits);
      return t;
    }
    t.text = as_string(content ? *content : *prompt, content ? "content" : "prompt");
    t.add_special = prompt.has_value();  // each server's own default
    if (auto v = member(o, "add_special")) t.add_special = as_bool(*v, "add_special");
    if (auto v = member(o, "add_special_tokens")) t.add_special = as_bool(*v, "add_special_tokens");
    return t;
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
}

std::variant<ProtocolError, std::vector<int64_t>> parse_detokenize_body(std::string_view body) {
  try {
    const object o = parse_object(parser(), body);
    auto tokens = member(o, "tokens");
    if (!tokens) refuse(ErrorCode::missing_field, "tokens is required");
    simdjson::dom::array list;
    if (tokens->get_array().get(list) != simdjson::SUCCESS)
      refuse(ErrorCode::bad_value, "tokens must be an array of token ids");
    std::vector<int64_t> ids;
    for (element e : list) {
      ids.push_back(as_integer(e, "tokens[" + std::to_string(ids.size()) + "]", INT32_MIN, INT32_MAX));
    }
    return ids;
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
}

std::variant<ProtocolError, ChatBody> parse_chat_body(std::string_view body, const ProtocolLimits& limits) {
  try {
    const object o = parse_object(parser(), body);
    ChatBody c;
    read_chat(o, c.messages, c.tools_json, limits);
    return c;
  } catch (Refusal& r) {
    return ProtocolError{r.code, std::move(r.message), std::nullopt};
  }
}

}  // namespace specd::net
