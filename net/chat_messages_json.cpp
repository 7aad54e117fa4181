#include "net/chat_messages_json.hpp"

namespace specd::net {

using namespace json_fields;

namespace {

std::string message_content(element e, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (e.type() == element_type::STRING) return as_string(e, where);
  if (e.type() != element_type::ARRAY)
    refuse(ErrorCode::bad_value, where + " must be a string or an array of text parts");
  std::string text;
  for (element part : e.get_array().value_unsafe()) {
    object o;
    if (part.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, where + " parts must be objects");
    auto type = member(o, "type");
    auto part_text = member(o, "text");
    if (!type || as_string(*type, where + " part type") != "text" || !part_text) {
      refuse(ErrorCode::bad_value, where + ": only {\"type\":\"text\",\"text\":...} parts are supported");
    }
    text += as_string(*part_text, where + " part text");
  }
  return text;
}

ToolCall read_tool_call(element e, const std::string& where) {
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, where + " must be an object");
  ToolCall call;
  if (auto id = member(o, "id")) call.id = as_string(*id, where + ".id");
  if (auto type = member(o, "type"); type && as_string(*type, where + ".type") != "function")
    refuse(ErrorCode::bad_value, where + ".type must be \"function\"");
  auto function = member(o, "function");
  object f;
  if (!function || function->get_object().get(f) != simdjson::SUCCESS)
    refuse(ErrorCode::missing_field, where + " needs a function object");
  auto name = member(f, "name");
  if (!name) refuse(ErrorCode::missing_field, where + ".function needs a name");
  call.name = as_string(*name, where + ".function.name");
  // OpenAI sends the arguments as a string holding JSON; an object is taken as it is.
  if (auto args = member(f, "arguments"))
    call.arguments =
        args->type() == element_type::STRING ? as_string(*args, where + ".function.arguments") : minified(*args);
  return call;
}

}  // namespace

void read_messages(element e, std::vector<ChatMessage>& messages, const ProtocolLimits& limits) {
  simdjson::dom::array list;
  if (e.get_array().get(list) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "messages must be an array");
  for (element m : list) {
    const size_t i = messages.size();
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (i >= limits.max_messages)
      refuse(ErrorCode::bad_value, "at most " + std::to_string(limits.max_messages) + " messages");
    object o;
    if (m.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, where + " must be an object");
    auto role = member(o, "role");
    if (!role) refuse(ErrorCode::missing_field, where + " needs a role");
    ChatMessage message{as_string(*role, "role"), {}};
    if (message.role == "developer") message.role = "system";  // OpenAI's newer name
    if (message.role != "system" && message.role != "user" && message.role != "assistant" && message.role != "tool") {
      refuse(ErrorCode::bad_value, where + ".role must be system, user, assistant or tool");
    }
    if (auto calls = member(o, "tool_calls")) {
      simdjson::dom::array call_list;
      if (message.role != "assistant")
        refuse(ErrorCode::bad_value, where + ": only assistant messages have tool_calls");
      if (calls->get_array().get(call_list) != simdjson::SUCCESS)
        refuse(ErrorCode::bad_value, where + ".tool_calls must be an array");
      for (element c : call_list) {
        message.tool_calls.push_back(
            read_tool_call(c, where + ".tool_calls[" + std::to_string(message.tool_calls.size()) + "]"));
      }
    }
    if (auto id = member(o, "tool_call_id")) message.tool_call_id = as_string(*id, where + ".tool_call_id");
    if (auto name = member(o, "name")) message.name = as_string(*name, where + ".name");
    if (auto content = member(o, "content"))
      message.content = message_content(*content, i);
    else if (message.role != "assistant")
      refuse(ErrorCode::missing_field, where + " needs content");
    messages.push_back(std::move(message));
  }
  if (messages.empty()) refuse(ErrorCode::bad_value, "messages is empty");
}

std::string read_tools(element e) {
  simdjson::dom::array list;
  if (e.get_array().get(list) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, "tools must be an array");
  size_t i = 0;
  for (element tool : list) {
    const std::string where = "tools[" + std::to_string(i++) + "]";
    object o, f;
    if (tool.get_object().get(o) != simdjson::SUCCESS) refuse(ErrorCode::bad_value, where + " must be an object");
    if (auto type = member(o, "type"); !type || as_string(*type, where + ".type") != "function")
      refuse(ErrorCode::bad_value, where + ".type must be \"function\"");
    auto function = member(o, "function");
    if (!function || function->get_object().get(f) != simdjson::SUCCESS)
      refuse(ErrorCode::missing_field, where + " needs a function object");
    auto name = member(f, "name");
    if (!name || as_string(*name, where + ".function.name").empty())
      refuse(ErrorCode::missing_field, where + ".function needs a name");
    if (auto params = member(f, "parameters"); params && params->type() != element_type::OBJECT)
      refuse(ErrorCode::bad_value, where + ".function.parameters must be an object (a JSON Schema)");
  }
  return i == 0 ? std::string() : minified(e);
}

}  // namespace specd::net
