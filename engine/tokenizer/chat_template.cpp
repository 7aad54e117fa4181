#include "engine/tokenizer/chat_template.hpp"

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/jinja/json_input.hpp"
#include "engine/jinja/template.hpp"
#include "engine/tokenizer/gguf_tokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/tokenizer_config.hpp"

namespace specd {

namespace {

// A template that does not parse names its origin: "FILE: template line N: ...".
ChatTemplate compiled(std::string_view source, std::string origin, std::string bos, std::string eos) {
  try {
    return ChatTemplate(source, origin, std::move(bos), std::move(eos));
  } catch (const SpecdError& e) {
    throw SpecdError(e.code(), origin + ": " + e.message());
  }
}

// A GGUF file's tokenizer.chat_template, or `template_file` with the file's tokens.
ChatTemplate from_gguf(const std::filesystem::path& path, const std::filesystem::path& template_file) {
  const std::optional<GgufChatTemplate> t = gguf_chat_template(GgufFile::open(path));
  const std::string bos = t ? t->bos_token : "", eos = t ? t->eos_token : "";
  if (!template_file.empty()) {
    return compiled(read_whole_file(template_file, "chat template"), template_file.string(), bos, eos);
  }
  if (!t) throw SpecdError(ErrorCode::unknown_chat_template, path.string() + ": no tokenizer.chat_template");
  return compiled(t->source, path.string() + " tokenizer.chat_template", bos, eos);
}

}  // namespace

ChatTemplate::ChatTemplate(std::string_view source, std::string origin, std::string bos_token, std::string eos_token)
    : template_(std::make_shared<const jinja::Template>(jinja::Template::compile(source))),
      origin_(std::move(origin)),
      source_(source),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)) {}

ChatTemplate ChatTemplate::from_model_dir(const std::filesystem::path& model_dir,
                                          const std::filesystem::path& template_file) {
  if (is_gguf_path(model_dir)) return from_gguf(model_dir, template_file);
  const auto config_file = model_dir / "tokenizer_config.json";
  // An explicit template needs no tokenizer_config.json; its tokens are then empty.
  const TokenizerConfig config = !template_file.empty() && !std::filesystem::exists(config_file)
                                     ? TokenizerConfig{}
                                     : read_tokenizer_config(config_file);
  const std::string bos = config.bos_token.value_or(""), eos = config.eos_token.value_or("");
  if (!template_file.empty()) {
    return compiled(read_whole_file(template_file, "chat template"), template_file.string(), bos, eos);
  }
  const auto jinja_file = model_dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja_file)) {
    return compiled(read_whole_file(jinja_file, "chat template"), jinja_file.string(), bos, eos);
  }
  if (config.chat_template) return compiled(*config.chat_template, config_file.string(), bos, eos);
  if (config.specd_chat_template) {
    if (*config.specd_chat_template != "speaker-turns") {
      throw SpecdError(ErrorCode::unknown_chat_template, config_file.string() + ": specd_chat_template \"" +
                                                             *config.specd_chat_template + "\" is not one specd knows");
    }
    return compiled(kSpeakerTurnsTemplate, config_file.string(), config.bos_token.value_or("<s>"),
                    config.eos_token.value_or("</s>"));
  }
  throw SpecdError(ErrorCode::unknown_chat_template,
                   config_file.string() + ": no chat_template (and no chat_template.jinja beside it)");
}

namespace {

// Arguments as vLLM hands them to templates: the parsed object when the text is JSON
// (Llama 3.1's template prints `arguments | tojson`), else the text itself.
jinja::Value arguments_value(const std::string& text) {
  try {
    jinja::Value v = jinja::value_from_json(text);
    if (v.is_mapping()) return v;
  } catch (const SpecdError&) {
  }
  return jinja::Value(text);
}

jinja::Value tool_calls_value(const std::vector<ToolCall>& calls) {
  jinja::Array list;
  for (const ToolCall& c : calls) {
    jinja::Value function = jinja::Value::dict();
    function.object().set("name", jinja::Value(c.name));
    function.object().set("arguments", arguments_value(c.arguments));
    jinja::Value call = jinja::Value::dict();
    if (!c.id.empty()) call.object().set("id", jinja::Value(c.id));
    call.object().set("type", jinja::Value("function"));
    call.object().set("function", std::move(function));
    list.push_back(std::move(call));
  }
  return jinja::Value::list(std::move(list));
}

jinja::Value message_value(const ChatMessage& m) {
  jinja::Value message = jinja::Value::dict();
  message.object().set("role", jinja::Value(m.role));
  // An assistant turn that only calls tools has no content (OpenAI sends null).
  const bool no_content = m.content.empty() && !m.tool_calls.empty();
  message.object().set("content", no_content ? jinja::Value(nullptr) : jinja::Value(m.content));
  if (!m.tool_calls.empty()) message.object().set("tool_calls", tool_calls_value(m.tool_calls));
  if (!m.tool_call_id.empty()) message.object().set("tool_call_id", jinja::Value(m.tool_call_id));
  if (!m.name.empty()) message.object().set("name", jinja::Value(m.name));
  return message;
}

}  // namespace

std::string ChatTemplate::render(std::span<const ChatMessage> messages, std::string_view tools_json) const {
  jinja::Array list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    // The roles chat APIs define; whether a template accepts one is the template's call.
    if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
      throw SpecdError(ErrorCode::invalid_argument,
                       "chat message role \"" + m.role + "\" is not one of system, user, assistant, tool");
    }
    list.push_back(message_value(m));
  }
  jinja::Value variables = jinja::Value::dict();
  variables.object().set("messages", jinja::Value::list(std::move(list)));
  if (!tools_json.empty()) {
    jinja::Value tools = jinja::value_from_json(tools_json);
    if (!tools.is_sequence_like()) throw SpecdError(ErrorCode::bad_value, "tools must be a JSON array");
    variables.object().set("tools", std::move(tools));
  }
  variables.object().set("add_generation_prompt", jinja::Value(true));
  variables.object().set("bos_token", jinja::Value(bos_token_));
  variables.object().set("eos_token", jinja::Value(eos_token_));
  variables.object().set("date_string", jinja::Value(date_string_));
  return template_->render(variables);
}

namespace {

struct SpecialToken {
  std::string_view text;
  int32_t id;
};

// The BOS/EOS strings the tokenizer would not turn into one token by itself. (One
// token is enough: a Llama 3 template's eos string <|eot_id|> is a special token
// while the tokenizer's first EOS id may be <|end_of_text|>.)
std::vector<SpecialToken> unmapped_specials(const Tokenizer& tokenizer, const std::string& bos,
                                            const std::string& eos) {
  std::vector<SpecialToken> out;
  auto consider = [&](const std::string& text, std::optional<int32_t> id) {
    if (text.empty() || !id) return;
    if (tokenizer.encode(text, false).size() != 1) out.push_back({text, *id});
  };
  consider(bos, tokenizer.bos_id());
  consider(eos, tokenizer.eos_ids().empty() ? std::nullopt : std::optional(tokenizer.eos_ids().front()));
  return out;
}

}  // namespace

std::vector<int32_t> ChatTemplate::encode(std::span<const ChatMessage> messages, const Tokenizer& tokenizer,
                                          std::string_view tools_json) const {
  const std::string text = render(messages, tools_json);
  const std::vector<SpecialToken> specials = unmapped_specials(tokenizer, bos_token_, eos_token_);
  if (specials.empty()) return tokenizer.encode(text, false);
  std::vector<int32_t> ids;
  size_t start = 0;
  auto flush = [&](size_t end) {
    if (end <= start) return;
    const auto piece = tokenizer.encode(std::string_view(text).substr(start, end - start), false);
    ids.insert(ids.end(), piece.begin(), piece.end());
  };
  for (size_t pos = 0; pos < text.size();) {
    const SpecialToken* hit = nullptr;
    for (const SpecialToken& s : specials) {
      if (text.compare(pos, s.text.size(), s.text) == 0 && (!hit || s.text.size() > hit->text.size())) hit = &s;
    }
    if (!hit) {
      ++pos;
      continue;
    }
    flush(pos);
    ids.push_back(hit->id);
    pos += hit->text.size();
    start = pos;
  }
  flush(text.size());
  return ids;
}

}  // namespace specd
