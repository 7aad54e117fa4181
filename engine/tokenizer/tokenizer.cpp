#include "engine/tokenizer/tokenizer.hpp"

#include <simdjson.h>

#include <system_error>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/gguf_tokenizer.hpp"
#include "engine/tokenizer/sentencepiece_json.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"

namespace specd {
namespace {

namespace fs = std::filesystem;
namespace od = simdjson::ondemand;

// On-demand parsing is lazy: walking every value is what makes a truncated or
// otherwise broken file fail here rather than pass unnoticed.
void validate_value(od::value value) {
  switch (value.type()) {
    case od::json_type::object:
      for (auto field : value.get_object()) validate_value(field.value());
      break;
    case od::json_type::array:
      for (auto element : value.get_array()) validate_value(element.value());
      break;
    case od::json_type::number:
      (void)value.get_number().value();
      break;
    case od::json_type::string:
      (void)value.get_string().value();
      break;
    case od::json_type::boolean:
      (void)value.get_bool().value();
      break;
    case od::json_type::null:
      if (!value.is_null()) throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
      break;
  }
}

int32_t token_id(od::value value, const fs::path& file, std::string_view field) {
  int64_t id = 0;
  if (value.get_int64().get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
    throw SpecdError(ErrorCode::bad_value,
                     file.string() + ": " + std::string(field) + " must be a non-negative integer token id");
  }
  return static_cast<int32_t>(id);
}

// Reads bos_token_id / eos_token_id from one JSON file into overrides, leaving
// fields the file does not set (or sets to null) untouched.
void read_special_ids(const fs::path& file, SpecialIdOverrides& overrides) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(file.string()).get(json) != simdjson::SUCCESS) {
    throw SpecdError(ErrorCode::missing_file, "cannot read " + file.string());
  }
  od::parser parser;
  SpecialIdOverrides found;
  try {
    od::document doc = parser.iterate(json);
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      od::value value = field.value();
      if (key != "bos_token_id" && key != "eos_token_id") {
        validate_value(value);
      } else if (value.is_null()) {
        continue;  // null: the file does not set it
      } else if (key == "bos_token_id") {
        found.bos = token_id(value, file, key);
      } else if (value.type() == od::json_type::array) {
        found.eos.emplace();
        for (auto element : value.get_array()) {
          found.eos->push_back(token_id(element.value(), file, key));
        }
      } else {
        found.eos = std::vector<int32_t>{token_id(value, file, key)};
      }
    }
    // Anything after the root object (simdjson's idiom for "at end").
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
      throw simdjson::simdjson_error(simdjson::TRAILING_CONTENT);
    }
  } catch (const simdjson::simdjson_error& e) {
    throw SpecdError(ErrorCode::malformed_json, file.string() + ": " + e.what());
  }
  if (found.bos) {
    overrides.bos = found.bos;
    overrides.bos_file = file;
  }
  if (found.eos) {
    overrides.eos = std::move(found.eos);
    overrides.eos_file = file;
  }
}

// The tokenizer.json's own BOS and EOS where config.json and generation_config.json are silent.
SpecialIdOverrides with_defaults(SpecialIdOverrides o, const SentencePieceVocab& v, const fs::path& file) {
  if (!o.bos && v.bos) o.bos = v.bos, o.bos_file = file;
  if (!o.eos && v.eos) o.eos = std::vector<int32_t>{*v.eos}, o.eos_file = file;
  return o;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& model_dir) {
  if (is_gguf_path(model_dir)) return load_gguf_tokenizer(GgufFile::open(model_dir));
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) {
    throw SpecdError(ErrorCode::missing_file, "model directory not found: " + model_dir.string());
  }
  // tokenizer.json first when it is byte-level BPE (Llama 3, Qwen): only it covers them.
  const fs::path bpe_file = model_dir / "tokenizer.json";
  const fs::path spm_file = model_dir / "tokenizer.model";
  const bool bpe = fs::exists(bpe_file, ec);
  if (!bpe && !fs::exists(spm_file, ec)) {
    throw SpecdError(ErrorCode::missing_file, "no tokenizer.model or tokenizer.json in " + model_dir.string());
  }
  // generation_config.json is what generation follows, so it wins over config.json.
  SpecialIdOverrides overrides;
  for (const char* name : {"config.json", "generation_config.json"}) {
    const fs::path file = model_dir / name;
    if (fs::exists(file, ec)) read_special_ids(file, overrides);
  }
  if (!bpe) return std::make_unique<SentencePieceTokenizer>(spm_file, std::move(overrides));
  try {
    return std::make_unique<BpeTokenizer>(bpe_file, overrides);
  } catch (const SpecdError& byte_level) {
    if (byte_level.code() != ErrorCode::unsupported_architecture) throw;
    // Llama-2-style folders: a SentencePiece-BPE tokenizer.json, usually beside the
    // tokenizer.model it was converted from, which tokenizes the same and loads faster.
    if (fs::exists(spm_file, ec)) return std::make_unique<SentencePieceTokenizer>(spm_file, std::move(overrides));
    SentencePieceJson json;
    try {
      json = read_sentencepiece_json(bpe_file);
    } catch (const SpecdError& spm) {
      if (spm.code() != ErrorCode::unsupported_architecture) throw;
      throw SpecdError(ErrorCode::unsupported_architecture,
                       byte_level.message() + "; and " + spm.message() + "; and there is no tokenizer.model");
    }
    auto tokenizer = std::make_unique<SentencePieceTokenizer>(
        sentencepiece_bpe_proto(json.vocab), bpe_file, with_defaults(std::move(overrides), json.vocab, bpe_file));
    tokenizer->split_added_tokens(std::move(json.added_tokens));
    return tokenizer;
  }
}

}  // namespace specd
