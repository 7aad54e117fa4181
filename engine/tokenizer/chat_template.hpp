#pragma once
// Chat templates: turns a conversation into the prompt a model was fine-tuned on, by
// rendering the model's own Jinja template (engine/jinja) exactly as transformers'
// apply_chat_template(add_generation_prompt=True) does. Immutable; any thread.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

namespace jinja {
class Template;
}

class Tokenizer;

// A function call an assistant made, as OpenAI's tool_calls carry it.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text (an object, as OpenAI sends it in a string)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool" (the template may refuse some)
  std::string content;
  std::vector<ToolCall> tool_calls;  // an assistant's calls; its content is then none when empty
  std::string tool_call_id;          // a tool message: the call it answers
  std::string name;                  // a tool message: the function's name (when given)
};

// specd's tiny pair's template (models/*/tokenizer_config.json, written by the trainer):
// "ROLE:\ncontent" turns ended by EOS. With tools it lists them in a SYSTEM turn as JSON
// lines and teaches <tool_call>{"name": NAME, "arguments": {...}}</tool_call> (the
// hermes syntax of net/tool_calls.hpp); an assistant's calls are written that way and
// tool results are TOOL turns.
inline constexpr std::string_view kSpeakerTurnsTemplate =
    "{{ bos_token }}{% if tools %}SYSTEM:\nYou can call these functions:\n{% for tool in tools %}{{ tool | tojson }"
    "}\n{% endfor %}To call one, answer with <tool_call>{\"name\": NAME, \"arguments\": {...}}</tool_call> and nothing "
    "else.{{ eos_token }"
    "}{% endif %}{% for message in messages %}{{ message['role'] | upper }}:\n{% if message['content'] %"
    "}{{ message['content'] }}{% endif %}{% if message['tool_calls'] %}{% for call in message['tool_calls'] %"
    "}<tool_call>{\"name\": {{ call['function']['name'] | tojson }}, \"arguments\": {{ call['function']['arguments'] | "
    "tojson }"
    "}}</tool_call>{% endfor %}{% endif %}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}ASSISTANT:\n{%"
    " endif %}";

class ChatTemplate {
 public:
  // The `date_string` variable every render gets (Llama 3.1-3.3 print it as "Today
  // Date"); HF passes nothing and 3.2 then asks strftime_now for today. specd keeps
  // prompts reproducible unless set_date_string is called.
  static constexpr const char* kDefaultDateString = "26 Jul 2024";

  // A template from its Jinja source; `origin` names it in errors. Throws
  // jinja::TemplateError (a SpecdError, invalid_argument) naming the line when it
  // does not parse.
  ChatTemplate(std::string_view source, std::string origin, std::string bos_token, std::string eos_token);

  // The model's template, from the first of: `template_file` (when not empty),
  // model_dir/chat_template.jinja, tokenizer_config.json's chat_template (a string, or
  // the list form's "default" entry), its specd_chat_template name, and for a .gguf
  // path the file's tokenizer.chat_template. bos_token and eos_token come from the same
  // files. Throws SpecdError: missing_file, unknown_chat_template naming the file when
  // there is none, invalid_argument naming the line when it does not parse.
  static ChatTemplate from_model_dir(const std::filesystem::path& model_dir,
                                     const std::filesystem::path& template_file = {});

  // The prompt text. `tools_json`: the request's tools (a JSON array, the template's
  // `tools` variable; empty: none). Tool calls' arguments reach the template as objects
  // where they parse as JSON (as vLLM passes them), else as the text. Throws
  // SpecdError(invalid_argument) for another role, bad_value for tools that are not a
  // JSON array, and jinja::TemplateError (invalid_argument) when the template refuses
  // the conversation (its raise_exception) or fails on it, naming the line.
  std::string render(std::span<const ChatMessage> messages, std::string_view tools_json = {}) const;
  // The prompt's token ids: the rendered text encoded without an added BOS, with the
  // template's BOS and EOS strings recognised as the tokenizer's bos_id() and first eos
  // id where its encoder does not map them itself (a SentencePiece model does not map
  // "<s>" in text to its control id, HF's slow tokenizer does).
  std::vector<int32_t> encode(std::span<const ChatMessage> messages, const Tokenizer& tokenizer,
                              std::string_view tools_json = {}) const;

  // Where the template came from: "DIR/tokenizer_config.json", "FILE.jinja", ...
  const std::string& origin() const { return origin_; }
  // The Jinja source (which tool-call syntax the model was taught is read from it).
  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  void set_date_string(std::string date) { date_string_ = std::move(date); }

 private:
  std::shared_ptr<const jinja::Template> template_;
  std::string origin_;
  std::string source_;
  std::string bos_token_, eos_token_;
  std::string date_string_ = kDefaultDateString;
};

}  // namespace specd
