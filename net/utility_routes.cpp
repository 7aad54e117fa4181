#include "net/utility_routes.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <ctime>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "json/json_serialize.hpp"
#include "net/frames.hpp"
#include "net/tokenize_body.hpp"

namespace specd::net {

namespace json = boost::json;

namespace {

RouteReply refused(WireCode code, std::string_view message) {
  return {http_status_for(code), openai_error_body(code, message)};
}

// The template's rendering of a conversation; a template's refusal is the request's fault.
std::string rendered(const Engine& engine, const std::vector<ChatMessage>& messages, const std::string& tools) {
  const ChatTemplate* chat = engine.chat_template();
  if (!chat) throw SpecdError(ErrorCode::unknown_chat_template, "the model has no chat template");
  try {
    return chat->render(messages, tools);
  } catch (const SpecdError& e) {
    throw SpecdError(ErrorCode::bad_value, e.message());
  }
}

}  // namespace

RouteReply tokenize_reply(const Engine& engine, std::string_view body, const ProtocolLimits& limits) {
  auto parsed = parse_tokenize_body(body, limits);
  if (auto* e = std::get_if<ProtocolError>(&parsed)) return refused(e->code, e->message);
  const TokenizeBody& t = std::get<TokenizeBody>(parsed);
  std::vector<int32_t> ids;
  try {
    if (t.chat) {
      rendered(engine, t.messages, t.tools_json);  // refusals first, with their codes
      ids = engine.chat_template()->encode(t.messages, *engine.tokenizer(), t.tools_json);
    } else {
      ids = engine.tokenizer()->encode(t.text, t.add_special);
    }
  } catch (const SpecdError& e) {
    return refused(e.code(), e.message());
  }
  const auto count = static_cast<int64_t>(ids.size());
  return {boost::beast::http::status::ok,
          serialize_json(json::object{{"tokens", json::array(ids.begin(), ids.end())},
                                      {"count", count},
                                      {"max_model_len", engine.config().sequence.max_seq_len}})};
}

RouteReply detokenize_reply(const Engine& engine, std::string_view body) {
  auto parsed = parse_detokenize_body(body);
  if (auto* e = std::get_if<ProtocolError>(&parsed)) return refused(e->code, e->message);
  const std::vector<int64_t>& given = std::get<std::vector<int64_t>>(parsed);
  const int32_t vocab = engine.tokenizer()->vocab_size();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] < 0 || given[i] >= vocab) {
      return refused(ErrorCode::bad_value, "tokens[" + std::to_string(i) + "] = " + std::to_string(given[i]) +
                                               " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<int32_t>(given[i]));
  }
  const std::string text = engine.tokenizer()->decode(ids);
  return {boost::beast::http::status::ok, serialize_json(json::object{{"content", text}, {"prompt", text}})};
}

RouteReply apply_template_reply(const Engine& engine, std::string_view body, const ProtocolLimits& limits) {
  auto parsed = parse_chat_body(body, limits);
  if (auto* e = std::get_if<ProtocolError>(&parsed)) return refused(e->code, e->message);
  const ChatBody& c = std::get<ChatBody>(parsed);
  try {
    return {boost::beast::http::status::ok,
            serialize_json(json::object{{"prompt", rendered(engine, c.messages, c.tools_json)}})};
  } catch (const SpecdError& e) {
    return refused(e.code(), e.message());
  }
}

std::string models_body(const std::string& model, const Engine& engine) {
  const int64_t context = engine.config().sequence.max_seq_len;
  const json::object entry{{"id", model},
                           {"object", "model"},
                           {"created", static_cast<int64_t>(std::time(nullptr))},
                           {"owned_by", "specd"},
                           {"max_model_len", context},
                           {"meta", json::object{{"n_ctx", context}, {"n_vocab", engine.tokenizer()->vocab_size()}}}};
  return serialize_json(json::object{{"object", "list"}, {"data", json::array{entry}}});
}

}  // namespace specd::net
