#pragma once
// Chat templates: turns a conversation into the prompt a model was fine-tuned on.
// specd does not run Jinja; it recognises the templates it knows from a model
// directory's tokenizer_config.json and renders them natively, byte for byte as HF
// apply_chat_template(add_generation_prompt=True) does. Immutable; any thread.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace specd {

class Tokenizer;

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

enum class ChatTemplateKind {
  // Llama 3 / 3.0 instruct: <|begin_of_text|> then
  // <|start_header_id|>ROLE<|end_header_id|>\n\n + trimmed content + <|eot_id|> per message.
  llama3,
  // Llama 3.1 / 3.2 instruct: as llama3, but always opens with a system turn holding
  // "Cutting Knowledge Date: December 2023\nToday Date: DATE\n\n" before the system
  // message (the official template's no-tools output).
  llama3_dated,
  // specd's default tiny pair: BOS, then "ROLE:\ncontent</s>" per message, "ASSISTANT:\n".
  speaker_turns,
};

class ChatTemplate {
 public:
  // The template the official Llama 3.1/3.2 template falls back to when the caller
  // gives no date (HF passes today's date through strftime_now; specd keeps prompts
  // reproducible unless set_date_string is called).
  static constexpr const char* kDefaultDateString = "26 Jul 2024";

  ChatTemplate(ChatTemplateKind kind, std::string bos_token, std::string eos_token);

  // Reads model_dir/tokenizer_config.json. Throws SpecdError: missing_file, and
  // unknown_chat_template naming the file when it has no template specd knows.
  static ChatTemplate from_model_dir(const std::filesystem::path& model_dir);

  // The prompt text. Throws SpecdError(invalid_argument) for an unknown role.
  std::string render(std::span<const ChatMessage> messages) const;
  // The prompt's token ids: text encoded without an added BOS, the template's BOS and
  // EOS strings as the tokenizer's bos_id() and first eos id (a SentencePiece model
  // does not map "<s>" in text to its control id, HF's slow tokenizer does).
  std::vector<int32_t> encode(std::span<const ChatMessage> messages, const Tokenizer& tokenizer) const;

  ChatTemplateKind kind() const { return kind_; }
  const char* name() const;
  void set_date_string(std::string date) { date_string_ = std::move(date); }

 private:
  struct Part {
    enum Kind { text, bos, eos } kind;
    std::string value;
  };
  std::vector<Part> parts(std::span<const ChatMessage> messages) const;
  void append_llama3(std::span<const ChatMessage> messages, std::string& out) const;

  ChatTemplateKind kind_;
  std::string bos_token_, eos_token_;
  std::string date_string_ = kDefaultDateString;
};

}  // namespace specd
