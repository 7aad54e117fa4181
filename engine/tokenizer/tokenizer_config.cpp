#include "engine/tokenizer/tokenizer_config.hpp"

#include <simdjson.h>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

namespace od = simdjson::ondemand;

// A special token is a string or an AddedToken object {"content": ...}; null is unset.
std::optional<std::string> token_text(od::value value, const std::filesystem::path& file, std::string_view key) {
  if (value.is_null()) return std::nullopt;
  if (value.type() == od::json_type::string) return std::string(value.get_string().value());
  if (value.type() == od::json_type::object) {
    std::string_view content;
    if (value.find_field_unordered("content").get_string().get(content) == simdjson::SUCCESS) {
      return std::string(content);
    }
  }
  throw SpecdError(ErrorCode::bad_value,
                   file.string() + ": " + std::string(key) + " must be a string or an object with \"content\"");
}

std::optional<std::string> string_field(od::value value, const std::filesystem::path& file, std::string_view key) {
  if (value.is_null()) return std::nullopt;
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) {
    throw SpecdError(ErrorCode::bad_value, file.string() + ": " + std::string(key) + " must be a string");
  }
  return std::string(text);
}

// chat_template: a string, or HF's list of named templates [{"name", "template"}]
// whose "default" entry is the chat template and "tool_use" the one for tools.
void read_chat_template(od::value value, const std::filesystem::path& file, TokenizerConfig& config) {
  if (value.type() != od::json_type::array) {
    config.chat_template = string_field(value, file, "chat_template");
    return;
  }
  for (od::value entry : value.get_array()) {
    std::string_view name, text;
    if (entry.find_field_unordered("name").get_string().get(name) != simdjson::SUCCESS ||
        entry.find_field_unordered("template").get_string().get(text) != simdjson::SUCCESS) {
      throw SpecdError(ErrorCode::bad_value,
                       file.string() + ": each chat_template entry needs a string \"name\" and \"template\"");
    }
    if (name == "default") config.chat_template = std::string(text);
    if (name == "tool_use") config.chat_template_tool_use = std::string(text);
  }
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::filesystem::path& file) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file.string()).get(json) != simdjson::SUCCESS) {
    throw SpecdError(ErrorCode::missing_file, "cannot read " + file.string());
  }
  TokenizerConfig config;
  od::parser parser;
  try {
    od::document doc = parser.iterate(json);
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      od::value value = field.value();
      if (key == "bos_token")
        config.bos_token = token_text(value, file, key);
      else if (key == "eos_token")
        config.eos_token = token_text(value, file, key);
      else if (key == "chat_template")
        read_chat_template(value, file, config);
      else if (key == "specd_chat_template")
        config.specd_chat_template = string_field(value, file, key);
      else if (key == "add_bos_token" && !value.is_null())
        config.add_bos_token = value.get_bool().value();
    }
  } catch (const simdjson::simdjson_error& e) {
    throw SpecdError(ErrorCode::malformed_json, file.string() + ": " + e.what());
  }
  return config;
}

}  // namespace specd
