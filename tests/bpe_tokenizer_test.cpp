// The HF tokenizer.json byte-level BPE tokenizer: exact Llama 3 ids for the committed
// fixture set (expected ids from @lenml/tokenizers, an independent implementation),
// and small hand-checkable tokenizers for merge order and added-token splitting.
#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "engine/tokenizer/byte_level.hpp"

using namespace specd;
namespace fs = std::filesystem;

namespace {

const fs::path kLlama3Dir = SPECD_LLAMA3_TOKENIZER_DIR;
const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "tests/data/llama3_tokenizer_fixtures.json";

// Fails (never skips) when setup has not fetched the tokenizer.
fs::path llama3_tokenizer_json() {
  const fs::path file = kLlama3Dir / "tokenizer.json";
  REQUIRE_MESSAGE(fs::exists(file),
                  "missing " << file << ": run scripts/fetch_llama3_tokenizer.sh (scripts/setup.sh does)");
  return file;
}

const BpeTokenizer& llama3() {
  static const BpeTokenizer tokenizer(llama3_tokenizer_json());
  return tokenizer;
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> load_cases() {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(kFixtures.string());
  std::vector<Case> cases;
  for (simdjson::dom::element c : doc["cases"].get_array()) {
    Case out{std::string(std::string_view(c["text"])), {}};
    for (int64_t id : c["ids"].get_array()) out.ids.push_back(static_cast<int32_t>(id));
    cases.push_back(std::move(out));
  }
  return cases;
}

// A tiny byte-level tokenizer: the 256 byte tokens (ids 0-255 in byte order), then
// the given merged tokens and merges, then the given added tokens.
fs::path write_tiny_tokenizer(const std::string& name, const std::vector<std::string>& merges,
                              const std::string& added_tokens_json, bool ignore_merges = false) {
  const fs::path dir = fs::temp_directory_path() / ("specd_bpe_" + name);
  fs::create_directories(dir);
  std::string vocab;
  int32_t next = 0;
  const auto add = [&](const std::string& byte_level) {
    if (!vocab.empty()) vocab += ",";
    vocab += "\"" +
             (byte_level == "\""   ? std::string("\\\"")
              : byte_level == "\\" ? std::string("\\\\")
                                   : byte_level) +
             "\":" + std::to_string(next++);
  };
  for (int b = 0; b < 256; ++b) add(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  std::string merges_json;
  for (const auto& m : merges) {
    add(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
    merges_json += (merges_json.empty() ? "\"" : ",\"") + m + "\"";
  }
  std::ofstream(dir / "tokenizer.json")
      << R"({"version":"1.0","added_tokens":[)" << added_tokens_json
      << R"(],"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)"
      << R"("model":{"type":"BPE","ignore_merges":)" << (ignore_merges ? "true" : "false") << R"(,"vocab":{)" << vocab
      << "},\"merges\":[" << merges_json << "]}}";
  return dir / "tokenizer.json";
}

}  // namespace

TEST_CASE("every Llama 3 fixture text encodes to the ids of the reference implementation") {
  const BpeTokenizer& tok = llama3();
  const auto cases = load_cases();
  REQUIRE(cases.size() >= 200);
  size_t passed = 0;
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const auto ids = tok.encode(c.text, false);
    CHECK(ids == c.ids);
    passed += ids == c.ids ? 1 : 0;
  }
  MESSAGE("llama3 fixtures: " << passed << "/" << cases.size() << " exact");
}

TEST_CASE("every Llama 3 fixture decodes back to its text") {
  const BpeTokenizer& tok = llama3();
  for (const auto& c : load_cases()) {
    CAPTURE(c.text);
    CHECK(tok.decode(c.ids) == c.text);
  }
}

TEST_CASE("Llama 3 vocabulary size, special ids and pieces") {
  const BpeTokenizer& tok = llama3();
  CHECK(tok.vocab_size() == 128256);
  // From the tokenizer_config.json beside tokenizer.json.
  CHECK(tok.bos_id() == 128000);
  CHECK(tok.eos_ids() == std::vector<int32_t>{128001});
  CHECK(tok.encode("Hello", true) == std::vector<int32_t>{128000, 9906});
  CHECK(tok.encode("", true) == std::vector<int32_t>{128000});
  CHECK(tok.id_to_piece(9906) == "Hello");
  CHECK(tok.id_to_piece(220) == " ");
  CHECK(tok.id_to_piece(128009) == "<|eot_id|>");
  CHECK(tok.decode(std::vector<int32_t>{128000, 9906, 128009}) == "<|begin_of_text|>Hello<|eot_id|>");
  // The grinning face is two tokens, the first ending inside the character.
  CHECK(tok.id_to_piece(76460) == "\xF0\x9F\x98");
  CHECK(tok.decode(std::vector<int32_t>{76460}) == "\xEF\xBF\xBD");
  CHECK_THROWS_AS(tok.id_to_piece(128256), SpecdError);
  CHECK_THROWS_AS(tok.decode(std::vector<int32_t>{-1}), SpecdError);
}

TEST_CASE("invalid UTF-8 input is a tokenizer_error") {
  try {
    (void)llama3().encode("abc\xFF", false);
    FAIL("expected an exception");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::tokenizer_error);
  }
}

TEST_CASE("a long run without a split encodes fast and round-trips") {
  const std::string text(200000, 'a');  // one regex word of 200 kB
  const auto ids = llama3().encode(text, false);
  CHECK(ids.size() < text.size() / 4);
  CHECK(llama3().decode(ids) == text);
}

TEST_CASE("merges apply lowest rank first, not left to right") {
  // "b c" outranks "a b", so "abc" becomes a + bc, then "a bc" merges it whole.
  const BpeTokenizer tok(write_tiny_tokenizer("rank", {"b c", "a b", "a bc"}, ""));
  const int32_t bc = 256, ab = 257, abc = 258;
  CHECK(tok.encode("abc", false) == std::vector<int32_t>{abc});
  CHECK(tok.encode("abd", false) == std::vector<int32_t>{ab, 'd'});
  CHECK(tok.encode("xbc", false) == std::vector<int32_t>{'x', bc});
  // Words are split first: " abc" is one word (space joins the letters), "abc abc" two.
  CHECK(tok.encode("abc abc", false) == std::vector<int32_t>{abc, ' ', abc});
  CHECK(tok.decode(tok.encode("abc abc", false)) == "abc abc");
}

TEST_CASE("equal pairs merge leftmost first") {
  const BpeTokenizer tok(write_tiny_tokenizer("leftmost", {"a a", "aa a"}, ""));
  const int32_t aa = 256, aaa = 257;
  CHECK(tok.encode("aaa", false) == std::vector<int32_t>{aaa});
  CHECK(tok.encode("aaaa", false) == std::vector<int32_t>{aa, aa});
  CHECK(tok.encode("aaaaa", false) == std::vector<int32_t>{aa, aaa});  // aa a a a, then aa aa a, then aa aaa
}

TEST_CASE("ignore_merges takes a whole word from the vocabulary") {
  // "b c" merges first, so the merges alone never reach "abc" (id 258) from "abc".
  const std::vector<std::string> merges{"b c", "a b", "ab c"};
  const BpeTokenizer by_merges(write_tiny_tokenizer("merges_only", merges, ""));
  CHECK(by_merges.encode("abc", false) == std::vector<int32_t>{'a', 256});
  const BpeTokenizer whole_words(write_tiny_tokenizer("ignore_merges", merges, "", true));
  CHECK(whole_words.encode("abc", false) == std::vector<int32_t>{258});
  CHECK(whole_words.encode("abcc", false) == std::vector<int32_t>{'a', 256, 'c'});
}

TEST_CASE("added tokens are split out leftmost-longest before BPE") {
  const BpeTokenizer tok(write_tiny_tokenizer(
      "added", {"a b"},
      R"({"id":300,"content":"<|x|>","special":true},{"id":301,"content":"<|x|>y","special":false})"));
  CHECK(tok.vocab_size() == 302);
  CHECK(tok.encode("ab<|x|>ab", false) == std::vector<int32_t>{256, 300, 256});
  CHECK(tok.encode("<|x|>yab", false) == std::vector<int32_t>{301, 256});
  CHECK(tok.encode("<|x|", false) == std::vector<int32_t>{'<', '|', 'x', '|'});
  CHECK(tok.decode(std::vector<int32_t>{300, 256}) == "<|x|>ab");
  CHECK_THROWS_AS(tok.decode(std::vector<int32_t>{299}), SpecdError);  // a gap in the ids
}

TEST_CASE("tokenizer.json features specd does not implement are refused") {
  const fs::path dir = fs::temp_directory_path() / "specd_bpe_unsupported";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"normalizer":{"type":"NFKC"},"pre_tokenizer":null,"model":{}})";
  try {
    BpeTokenizer tok(dir / "tokenizer.json");
    FAIL("expected an exception");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(std::string(e.what()).find("normalizer") != std::string::npos);
  }
}

TEST_CASE("load_tokenizer picks tokenizer.json and takes every EOS id the directory declares") {
  const fs::path dir = fs::temp_directory_path() / "specd_bpe_model_dir";
  fs::create_directories(dir);
  fs::copy_file(llama3_tokenizer_json(), dir / "tokenizer.json", fs::copy_options::overwrite_existing);
  // As Llama 3.2 instruct's generation_config.json declares them.
  std::ofstream(dir / "generation_config.json")
      << R"({"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "do_sample": true})";
  const auto tok = load_tokenizer(dir);
  REQUIRE(dynamic_cast<const BpeTokenizer*>(tok.get()) != nullptr);
  CHECK(tok->bos_id() == 128000);
  CHECK(tok->eos_ids() == std::vector<int32_t>{128001, 128008, 128009});
  CHECK(tok->encode("Hello world", true) == std::vector<int32_t>{128000, 9906, 1917});
}
