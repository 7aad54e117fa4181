#include "engine/tokenizer/sentencepiece_json.hpp"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "engine/base/errors.hpp"

namespace specd {

namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

[[noreturn]] void unsupported(const fs::path& file, const std::string& what) {
  throw SpecdError(ErrorCode::unsupported_architecture,
                   file.string() + ": not a SentencePiece-BPE tokenizer.json: " + what);
}

std::string text_of(element e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v)) return "";
  return std::string(v);
}

bool is_null_or_absent(object o, std::string_view key) {
  element e;
  return o.at_key(key).get(e) != simdjson::SUCCESS || e.is_null();
}

// Llama 2 / TinyLlama / Mistral: Sequence[Prepend "▁", Replace " " -> "▁"] (or only the
// Replace: no dummy prefix). Returns add_dummy_prefix.
bool read_normalizer(element n, const fs::path& file) {
  bool prepend = false, replace = false;
  simdjson::dom::array steps;
  if (text_of(n, "type") != "Sequence" || n["normalizers"].get_array().get(steps))
    unsupported(file, "normalizer " + text_of(n, "type"));
  for (element step : steps) {
    const std::string type = text_of(step, "type");
    if (type == "Prepend" && text_of(step, "prepend") == kSpace && !replace) {
      prepend = true;
    } else if (type == "Replace" && text_of(step["pattern"], "String") == " " && text_of(step, "content") == kSpace) {
      replace = true;
    } else {
      unsupported(file, "normalizer step " + type);
    }
  }
  if (!replace) unsupported(file, "the normalizer does not turn spaces into U+2581");
  return prepend;
}

// The newer form: no normalizer, a Metaspace pre-tokenizer that does not split. Returns
// add_dummy_prefix.
bool read_metaspace(element p, const fs::path& file) {
  if (text_of(p, "type") != "Metaspace") unsupported(file, "pre-tokenizer " + text_of(p, "type"));
  if (text_of(p, "replacement") != kSpace) unsupported(file, "a Metaspace replacement other than U+2581");
  bool split = true;
  if (!p["split"].get_bool().get(split) && split) unsupported(file, "a Metaspace pre-tokenizer that splits words");
  std::string scheme = text_of(p, "prepend_scheme");
  if (scheme.empty()) {  // older files: add_prefix_space
    bool add = true;
    (void)p["add_prefix_space"].get_bool().get(add);
    scheme = add ? "always" : "never";
  }
  // "first" and "always" differ only after an added token, where SentencePiece adds none.
  if (scheme != "first" && scheme != "always" && scheme != "never")
    unsupported(file, "Metaspace prepend_scheme " + scheme);
  return scheme != "never";
}

std::vector<std::pair<std::string, std::string>> read_merges(simdjson::dom::array merges, const fs::path& file) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (element m : merges) {
    std::string_view text;
    simdjson::dom::array pair;
    if (!m.get_array().get(pair)) {
      if (pair.size() != 2) unsupported(file, "a merge that is not a pair");
      out.emplace_back(std::string(pair.at(0).get_string().value()), std::string(pair.at(1).get_string().value()));
    } else if (!m.get_string().get(text)) {
      const size_t space = text.find(' ');
      if (space == std::string_view::npos) unsupported(file, "a merge that is not two tokens: " + std::string(text));
      out.emplace_back(std::string(text.substr(0, space)), std::string(text.substr(space + 1)));
    } else {
      unsupported(file, "a merge that is neither a string nor a pair");
    }
  }
  return out;
}

bool is_byte_piece(std::string_view p) {
  return p.size() == 6 && p.starts_with("<0x") && p.back() == '>' && std::isxdigit(static_cast<unsigned char>(p[3])) &&
         std::isxdigit(static_cast<unsigned char>(p[4]));
}

// The BOS of the post-processor's single-sequence template (`<s>` $A), if any.
std::optional<std::string> template_bos(element post) {
  simdjson::dom::array single;
  if (post.is_null() || text_of(post, "type") != "TemplateProcessing" || post["single"].get_array().get(single) ||
      single.size() == 0)
    return std::nullopt;
  std::string_view id;
  if (single.at(0)["SpecialToken"]["id"].get_string().get(id)) return std::nullopt;
  return std::string(id);
}

}  // namespace

SentencePieceJson read_sentencepiece_json(const fs::path& file) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.load(file.string()).get(root))
    throw SpecdError(err == simdjson::IO_ERROR ? ErrorCode::missing_file : ErrorCode::malformed_json,
                     file.string() + ": " + simdjson::error_message(err));
  object top;
  if (root.get_object().get(top)) throw SpecdError(ErrorCode::malformed_json, file.string() + ": not a JSON object");
  element model = root["model"];
  if (text_of(model, "type") != "BPE") unsupported(file, "model type " + text_of(model, "type"));
  bool byte_fallback = false;
  (void)model["byte_fallback"].get_bool().get(byte_fallback);
  bool ignore_merges = false;
  (void)model["ignore_merges"].get_bool().get(ignore_merges);
  if (ignore_merges) unsupported(file, "ignore_merges");

  SentencePieceJson out;
  SentencePieceVocab& v = out.vocab;
  const bool normalizer = !is_null_or_absent(top, "normalizer"), metaspace = !is_null_or_absent(top, "pre_tokenizer");
  if (normalizer == metaspace) unsupported(file, "spaces must become U+2581 by a normalizer or by Metaspace, not both");
  v.add_dummy_prefix =
      normalizer ? read_normalizer(root["normalizer"], file) : read_metaspace(root["pre_tokenizer"], file);

  object vocab;
  if (model["vocab"].get_object().get(vocab)) unsupported(file, "a model without a vocab object");
  const size_t n = vocab.size();
  v.pieces.assign(n, "");
  v.types.assign(n, PieceType::normal);
  v.scores.assign(n, 0.0f);
  std::unordered_map<std::string, int32_t> id_of;
  for (auto [key, value] : vocab) {
    int64_t id = -1;
    if (value.get_int64().get(id) || id < 0 || id >= static_cast<int64_t>(n) || !v.pieces[id].empty())
      unsupported(file, "vocab ids that are not 0..N-1 once each");
    v.pieces[id] = std::string(key);
    id_of[v.pieces[id]] = static_cast<int32_t>(id);
    if (byte_fallback && is_byte_piece(key)) v.types[id] = PieceType::byte;
  }
  // SentencePiece merges the pair whose joined piece scores highest; HF merges by rank.
  // A piece's score is minus the rank of the first merge that makes it, so the two agree.
  simdjson::dom::array merges;
  if (model["merges"].get_array().get(merges)) unsupported(file, "a model without merges");
  const auto pairs = read_merges(merges, file);
  std::vector<bool> made(n, false);
  for (size_t rank = 0; rank < pairs.size(); ++rank) {
    const auto it = id_of.find(pairs[rank].first + pairs[rank].second);
    if (it == id_of.end() || !id_of.count(pairs[rank].first) || !id_of.count(pairs[rank].second))
      unsupported(file, "merge " + std::to_string(rank) + " joins pieces outside the vocab");
    if (made[it->second]) continue;
    made[it->second] = true;
    v.scores[it->second] = -static_cast<float>(rank);
  }
  // A piece of several characters that no merge makes must stay out of SentencePiece's
  // merging (HF's BPE cannot produce it either): type unused.
  for (size_t id = 0; id < n; ++id) {
    const std::string& p = v.pieces[id];
    const bool one_char =
        !p.empty() && p.size() == static_cast<size_t>((static_cast<unsigned char>(p[0]) < 0x80)   ? 1
                                                      : (static_cast<unsigned char>(p[0]) < 0xE0) ? 2
                                                      : (static_cast<unsigned char>(p[0]) < 0xF0) ? 3
                                                                                                  : 4);
    if (!made[id] && !one_char && v.types[id] == PieceType::normal) v.types[id] = PieceType::unused;
  }
  const std::string unk = text_of(model, "unk_token");
  if (unk.empty() || !id_of.count(unk)) unsupported(file, "no unk_token in the vocab");
  v.unk = id_of[unk];
  v.types[v.unk] = PieceType::unknown;
  simdjson::dom::array added;
  if (!root["added_tokens"].get_array().get(added)) {
    for (element t : added) {
      const std::string content = text_of(t, "content");
      int64_t id = -1;
      if (t["id"].get_int64().get(id) || id < 0 || id >= static_cast<int64_t>(n) || v.pieces[id] != content)
        unsupported(file, "added token " + content + " outside the vocab");
      bool special = false;
      (void)t["special"].get_bool().get(special);
      if (id != v.unk) v.types[id] = special ? PieceType::control : PieceType::user_defined;
      out.added_tokens.emplace_back(content, static_cast<int32_t>(id));
    }
  }
  if (const auto bos = template_bos(root["post_processor"]); bos && id_of.count(*bos)) v.bos = id_of[*bos];
  if (id_of.count("</s>")) v.eos = id_of["</s>"];
  return out;
}

}  // namespace specd
