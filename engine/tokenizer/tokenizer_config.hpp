#pragma once
// The fields specd reads from a model directory's HF `tokenizer_config.json`: the
// special-token strings, whether encoding adds the BOS, and the chat template.
#include <filesystem>
#include <optional>
#include <string>

namespace specd {

struct TokenizerConfig {
  std::optional<std::string> bos_token;  // e.g. "<|begin_of_text|>", "<s>"
  std::optional<std::string> eos_token;
  std::optional<std::string> chat_template;  // the Jinja source, kept as text
  // The list form's "tool_use" entry (the list's "default" is chat_template above).
  std::optional<std::string> chat_template_tool_use;
  std::optional<std::string> specd_chat_template;  // specd's own template name, if set
  // false in Qwen's files: the model has a BOS id (config.json) that text never starts with.
  std::optional<bool> add_bos_token;
};

// Throws SpecdError: missing_file, malformed_json, bad_value (a field of the wrong type).
TokenizerConfig read_tokenizer_config(const std::filesystem::path& file);

}  // namespace specd
