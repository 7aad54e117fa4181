#include "engine/tokenizer/bpe_tokenizer_file.hpp"

#include <simdjson.h>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/pretokenizer_regex.hpp"

namespace specd {

namespace {

namespace fs = std::filesystem;
namespace od = simdjson::ondemand;

[[noreturn]] void unsupported(const fs::path& file, const std::string& what) {
  throw SpecdError(ErrorCode::unsupported_architecture, file.string() + ": " + what);
}

bool bool_field(od::object object, std::string_view key, bool fallback) {
  bool value = fallback;
  auto field = object.find_field_unordered(key);
  if (field.error() == simdjson::SUCCESS && !field.is_null()) value = field.get_bool().value();
  return value;
}

std::string string_field(od::object object, std::string_view key) {
  std::string_view value;
  auto field = object.find_field_unordered(key);
  if (field.error() != simdjson::SUCCESS || field.is_null()) return {};
  if (field.get_string().get(value) != simdjson::SUCCESS) return {};
  return std::string(value);
}

// One pre-tokenizer step: Split (regex, Isolated) adds its pattern; ByteLevel adds
// the GPT-2 pattern when use_regex; Sequence recurses.
void read_pre_tokenizer(od::object object, const fs::path& file, BpeTokenizerFile& out) {
  const std::string type = string_field(object, "type");
  if (type == "Sequence") {
    for (auto step : object.find_field_unordered("pretokenizers").get_array()) {
      read_pre_tokenizer(step.get_object(), file, out);
    }
  } else if (type == "Split") {
    if (bool_field(object, "invert", false)) unsupported(file, "Split pre-tokenizer with invert");
    const std::string behavior = string_field(object, "behavior");
    if (behavior != "Isolated") unsupported(file, "Split pre-tokenizer behavior \"" + behavior + "\"");
    const std::string regex = string_field(object.find_field_unordered("pattern").get_object(), "Regex");
    if (regex.empty()) unsupported(file, "Split pre-tokenizer without a Regex pattern");
    out.split_patterns.push_back(regex);
  } else if (type == "ByteLevel") {
    if (bool_field(object, "add_prefix_space", false)) unsupported(file, "ByteLevel add_prefix_space");
    out.byte_level = true;
    if (bool_field(object, "use_regex", true)) out.split_patterns.emplace_back(kGpt2SplitPattern);
  } else {
    unsupported(file, "pre-tokenizer type \"" + type + "\"");
  }
}

void read_added_tokens(od::array tokens, const fs::path& file, BpeTokenizerFile& out) {
  for (auto element : tokens) {
    od::object token = element.get_object();
    AddedTokenSpec spec;
    spec.id = static_cast<int32_t>(token.find_field_unordered("id").get_int64().value());
    spec.content = string_field(token, "content");
    spec.special = bool_field(token, "special", false);
    for (const char* option : {"lstrip", "rstrip", "single_word"}) {
      if (bool_field(token, option, false)) unsupported(file, "added token " + spec.content + " with " + option);
    }
    if (spec.content.empty()) unsupported(file, "an added token with empty content");
    out.added_tokens.push_back(std::move(spec));
  }
}

void read_merge(od::value merge, const fs::path& file, BpeTokenizerFile& out) {
  if (merge.type() == od::json_type::array) {  // newer form: ["a", "b"]
    auto pair = merge.get_array();
    std::vector<std::string> parts;
    for (auto part : pair) parts.emplace_back(part.get_string().value());
    if (parts.size() != 2) unsupported(file, "a merge that is not a pair");
    out.merges.emplace_back(std::move(parts[0]), std::move(parts[1]));
    return;
  }
  const std::string_view text = merge.get_string().value();  // older form: "a b"
  const size_t space = text.find(' ');
  if (space == std::string_view::npos || text.find(' ', space + 1) != std::string_view::npos) {
    unsupported(file, "a merge that is not two space-separated tokens: " + std::string(text));
  }
  out.merges.emplace_back(std::string(text.substr(0, space)), std::string(text.substr(space + 1)));
}

void read_model(od::object model, const fs::path& file, BpeTokenizerFile& out) {
  bool has_vocab = false, has_merges = false;
  for (auto field : model) {
    const std::string_view key = field.unescaped_key();
    od::value value = field.value();
    if (key == "type") {
      const std::string_view type = value.get_string().value();
      if (type != "BPE") unsupported(file, "model type \"" + std::string(type) + "\" (only BPE)");
    } else if (key == "vocab") {
      has_vocab = true;
      for (auto entry : value.get_object()) {
        std::string token(entry.unescaped_key().value());
        out.vocab.emplace_back(std::move(token), static_cast<int32_t>(entry.value().get_int64().value()));
      }
    } else if (key == "merges") {
      has_merges = true;
      for (auto merge : value.get_array()) read_merge(merge.value(), file, out);
    } else if (key == "ignore_merges") {
      out.ignore_merges = !value.is_null() && value.get_bool().value();
    } else if (key == "continuing_subword_prefix" || key == "end_of_word_suffix") {
      // Qwen's files write "" for none.
      if (!value.is_null() && !value.get_string().value().empty()) unsupported(file, "BPE " + std::string(key));
    }
  }
  if (!has_vocab || !has_merges) {
    throw SpecdError(ErrorCode::missing_field, file.string() + ": model has no vocab or no merges");
  }
}

}  // namespace

BpeTokenizerFile read_bpe_tokenizer_file(const fs::path& file) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file.string()).get(json) != simdjson::SUCCESS) {
    throw SpecdError(ErrorCode::missing_file, "cannot read " + file.string());
  }
  BpeTokenizerFile out;
  bool has_model = false;
  od::parser parser;
  try {
    od::document doc = parser.iterate(json);
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      od::value value = field.value();
      if (key == "added_tokens") {
        if (!value.is_null()) read_added_tokens(value.get_array(), file, out);
      } else if (key == "normalizer") {
        if (value.is_null()) continue;
        if (value.type() != od::json_type::object || string_field(value.get_object(), "type") != "NFC")
          unsupported(file, "a normalizer other than NFC");
        out.nfc = true;
      } else if (key == "pre_tokenizer") {
        if (value.is_null()) unsupported(file, "no pre-tokenizer (byte-level BPE needs ByteLevel)");
        read_pre_tokenizer(value.get_object(), file, out);
      } else if (key == "model") {
        has_model = true;
        read_model(value.get_object(), file, out);
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw SpecdError(ErrorCode::malformed_json, file.string() + ": " + e.what());
  }
  if (!has_model) throw SpecdError(ErrorCode::missing_field, file.string() + ": no \"model\"");
  if (!out.byte_level) unsupported(file, "a BPE tokenizer without a ByteLevel pre-tokenizer");
  return out;
}

}  // namespace specd
