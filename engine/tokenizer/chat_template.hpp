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

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool" (the template may refuse some)
  std::string content;
};

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

  // The prompt text. Throws SpecdError(invalid_argument) for another role, and
  // jinja::TemplateError (invalid_argument) when the template refuses the conversation
  // (its raise_exception) or fails on it, naming the line.
  std::string render(std::span<const ChatMessage> messages) const;
  // The prompt's token ids: the rendered text encoded without an added BOS, with the
  // template's BOS and EOS strings recognised as the tokenizer's bos_id() and first eos
  // id where its encoder does not map them itself (a SentencePiece model does not map
  // "<s>" in text to its control id, HF's slow tokenizer does).
  std::vector<int32_t> encode(std::span<const ChatMessage> messages, const Tokenizer& tokenizer) const;

  // Where the template came from: "DIR/tokenizer_config.json", "FILE.jinja", ...
  const std::string& origin() const { return origin_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  void set_date_string(std::string date) { date_string_ = std::move(date); }

 private:
  std::shared_ptr<const jinja::Template> template_;
  std::string origin_;
  std::string bos_token_, eos_token_;
  std::string date_string_ = kDefaultDateString;
};

}  // namespace specd
