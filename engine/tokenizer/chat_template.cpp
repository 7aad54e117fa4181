#include "engine/tokenizer/chat_template.hpp"

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/tokenizer/gguf_tokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/tokenizer_config.hpp"

namespace specd {

namespace {

// Jinja's trim is Python's str.strip(); specd strips ASCII whitespace only (Unicode
// spaces at the ends of a chat message are rare enough not to warrant tables).
std::string trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return std::string(s.substr(begin, s.find_last_not_of(kSpace) - begin + 1));
}

void check_role(const ChatMessage& m) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant") {
    throw SpecdError(ErrorCode::invalid_argument,
                     "chat message role \"" + m.role + "\" is not one of system, user, assistant");
  }
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

void append_header_turn(const std::string& role, std::string_view content, std::string& out) {
  out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + trim(content) + "<|eot_id|>";
}

}  // namespace

ChatTemplate::ChatTemplate(ChatTemplateKind kind, std::string bos_token, std::string eos_token)
    : kind_(kind), bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)) {}

namespace {

// specd's tiny pair's template as its tokenizer_config.json (and a GGUF made from it) holds it.
constexpr std::string_view kSpeakerTurnsJinja =
    "{{ bos_token }}{% for message in messages %}{{ message['role'] | upper }}:\n{{ message['content'] }}"
    "{{ eos_token }}{% endfor %}{% if add_generation_prompt %}ASSISTANT:\n{% endif %}";

// A chat_template text specd renders natively, or an error naming its source.
ChatTemplate recognise(const std::string& source, const std::optional<std::string>& bos,
                       const std::optional<std::string>& eos, const std::string& where) {
  if (source == kSpeakerTurnsJinja)
    return ChatTemplate(ChatTemplateKind::speaker_turns, bos.value_or("<s>"), eos.value_or("</s>"));
  const bool llama3 = source.find("<|start_header_id|>") != std::string::npos &&
                      source.find("<|end_header_id|>") != std::string::npos &&
                      source.find("<|eot_id|>") != std::string::npos;
  if (!llama3)
    throw SpecdError(ErrorCode::unknown_chat_template,
                     where + ": chat_template is not one specd knows (Llama 3, or specd_chat_template)");
  const bool dated = source.find("Cutting Knowledge Date") != std::string::npos;
  return ChatTemplate(dated ? ChatTemplateKind::llama3_dated : ChatTemplateKind::llama3,
                      bos.value_or("<|begin_of_text|>"), eos.value_or("<|eot_id|>"));
}

ChatTemplate from_gguf(const std::filesystem::path& path) {
  const std::optional<GgufChatTemplate> t = gguf_chat_template(GgufFile::open(path));
  if (!t) throw SpecdError(ErrorCode::unknown_chat_template, path.string() + ": no tokenizer.chat_template");
  // A Llama 3 GGUF's eos token may be <|end_of_text|>; its turns end in <|eot_id|>.
  const bool llama3 = t->source.find("<|eot_id|>") != std::string::npos;
  return recognise(t->source, t->bos_token, llama3 ? std::nullopt : std::optional(t->eos_token), path.string());
}

}  // namespace

ChatTemplate ChatTemplate::from_model_dir(const std::filesystem::path& model_dir) {
  if (is_gguf_path(model_dir)) return from_gguf(model_dir);
  const auto file = model_dir / "tokenizer_config.json";
  const TokenizerConfig config = read_tokenizer_config(file);
  if (config.specd_chat_template) {
    if (*config.specd_chat_template != "speaker-turns") {
      throw SpecdError(ErrorCode::unknown_chat_template, file.string() + ": specd_chat_template \"" +
                                                             *config.specd_chat_template + "\" is not one specd knows");
    }
    return ChatTemplate(ChatTemplateKind::speaker_turns, config.bos_token.value_or("<s>"),
                        config.eos_token.value_or("</s>"));
  }
  if (!config.chat_template) throw SpecdError(ErrorCode::unknown_chat_template, file.string() + ": no chat_template");
  return recognise(*config.chat_template, config.bos_token, config.eos_token, file.string());
}

const char* ChatTemplate::name() const {
  switch (kind_) {
    case ChatTemplateKind::llama3:
      return "llama3";
    case ChatTemplateKind::llama3_dated:
      return "llama3-dated";
    case ChatTemplateKind::speaker_turns:
      return "speaker-turns";
  }
  return "?";
}

void ChatTemplate::append_llama3(std::span<const ChatMessage> messages, std::string& out) const {
  if (kind_ == ChatTemplateKind::llama3) {
    // The 3.0 template puts BOS before the first message only.
    if (!messages.empty()) out += bos_token_;
    for (const auto& m : messages) append_header_turn(m.role, m.content, out);
  } else {
    out += bos_token_;
    std::string system;
    if (!messages.empty() && messages.front().role == "system") {
      system = trim(messages.front().content);
      messages = messages.subspan(1);
    }
    // Always a system turn, even without a system message (the official template).
    out += "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: " +
           date_string_ + "\n\n" + system + "<|eot_id|>";
    for (const auto& m : messages) append_header_turn(m.role, m.content, out);
  }
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

std::vector<ChatTemplate::Part> ChatTemplate::parts(std::span<const ChatMessage> messages) const {
  for (const auto& m : messages) check_role(m);
  if (kind_ != ChatTemplateKind::speaker_turns) {
    // One text: the BPE tokenizer turns the special-token strings into their ids.
    std::string text;
    append_llama3(messages, text);
    return {{Part::text, std::move(text)}};
  }
  std::vector<Part> out{{Part::bos, bos_token_}};
  for (const auto& m : messages) {
    out.push_back({Part::text, upper(m.role) + ":\n" + m.content});
    out.push_back({Part::eos, eos_token_});
  }
  out.push_back({Part::text, "ASSISTANT:\n"});
  return out;
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages) const {
  std::string text;
  for (const auto& part : parts(messages)) text += part.value;
  return text;
}

std::vector<int32_t> ChatTemplate::encode(std::span<const ChatMessage> messages, const Tokenizer& tokenizer) const {
  std::vector<int32_t> ids;
  for (const auto& part : parts(messages)) {
    if (part.kind == Part::text) {
      const auto piece = tokenizer.encode(part.value, false);
      ids.insert(ids.end(), piece.begin(), piece.end());
    } else if (part.kind == Part::bos) {
      if (!tokenizer.bos_id()) throw SpecdError(ErrorCode::tokenizer_error, "chat template needs a BOS id");
      ids.push_back(*tokenizer.bos_id());
    } else {
      if (tokenizer.eos_ids().empty()) throw SpecdError(ErrorCode::tokenizer_error, "chat template needs an EOS id");
      ids.push_back(tokenizer.eos_ids().front());
    }
  }
  return ids;
}

}  // namespace specd
