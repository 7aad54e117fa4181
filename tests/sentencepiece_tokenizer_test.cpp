// SentencePieceTokenizer and load_tokenizer against the real Llama 2 model. Expected
// ids were computed with Debian's `spm_encode --model=... --output_format=id`.
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/temp_dir.hpp"

using specd::testing::TempDir;

namespace fs = std::filesystem;
using specd::ErrorCode;
using specd::SentencePieceTokenizer;
using specd::SpecdError;

namespace {

const fs::path kLlama2Model = SPECD_SOURCE_DIR "/../shared/data/llama2-tokenizer.model";
const fs::path kShakespeare = SPECD_SOURCE_DIR "/../shared/data/tinyshakespeare.txt";

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

// A model directory holding a link to the Llama 2 model and, unless empty, the
// given config files.
void make_model_dir(const fs::path& dir, const std::string& generation_config, const std::string& config = "") {
  fs::create_symlink(fs::absolute(kLlama2Model), dir / "tokenizer.model");
  if (!generation_config.empty()) write_file(dir / "generation_config.json", generation_config);
  if (!config.empty()) write_file(dir / "config.json", config);
}

// Checks that fn throws a SpecdError with the expected code whose message
// contains `named` (the file or id the error is about).
template <class Fn>
void check_error(Fn&& fn, ErrorCode expected, const std::string& named) {
  try {
    fn();
  } catch (const SpecdError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(e.code() == expected, what);
    CHECK_MESSAGE(what.find(named) != std::string::npos, what);
    return;
  }
  FAIL("expected a SpecdError naming " << named);
}

void check_generation_config_error(const std::string& json, ErrorCode expected) {
  TempDir dir;
  make_model_dir(dir.path, "");
  write_file(dir.path / "generation_config.json", json);
  check_error([&] { specd::load_tokenizer(dir.path); }, expected, "generation_config.json");
}

const SentencePieceTokenizer& llama2() {
  static const SentencePieceTokenizer tokenizer(kLlama2Model);
  return tokenizer;
}

using Ids = std::vector<int32_t>;

}  // namespace

TEST_CASE("llama2 model reports 32000 pieces, BOS 1 and EOS 2") {
  CHECK(llama2().vocab_size() == 32000);
  CHECK(llama2().bos_id() == 1);
  CHECK(llama2().eos_ids() == Ids{2});
}

TEST_CASE("encode gives the ids spm_encode gives") {
  const auto& t = llama2();
  CHECK(t.encode("Hello world", false) == Ids{15043, 3186});
  CHECK(t.encode("The quick brown fox jumps over the lazy dog.", false) ==
        Ids{450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889});
  CHECK(t.encode("Café déjà vu", false) == Ids{315, 28059, 20737, 18679});
  CHECK(t.encode("你好，世界", false) == Ids{29871, 30919, 31076, 30214, 30793, 30967});
  CHECK(t.encode("🦙 llama", false) == Ids{29871, 243, 162, 169, 156, 11148, 3304});
  CHECK(t.encode("  two  spaces", false) == Ids{259, 1023, 29871, 8162});
  CHECK(t.encode("", false).empty());
}

TEST_CASE("add_bos prepends id 1") {
  CHECK(llama2().encode("Hello world", true) == Ids{1, 15043, 3186});
  CHECK(llama2().encode("", true) == Ids{1});
}

TEST_CASE("decode inverts encode on ASCII, accents, CJK, emoji and whitespace") {
  const auto& t = llama2();
  const std::vector<std::string> texts = {
      "Hello world",
      "The quick brown fox jumps over the lazy dog.",
      "¿Qué tal? Ça va, naïve Zoë",
      "日本語のテキスト 你好，世界",
      "a🦙b 🚀🎉 done",
      "  two  spaces\nand a new line\n\ttab",
      "x",
  };
  for (const auto& text : texts) {
    CAPTURE(text);
    CHECK(t.decode(t.encode(text, false)) == text);
    CHECK(t.decode(t.encode(text, true)) == text);  // BOS prints nothing
  }
  CHECK(t.decode(Ids{}).empty());
}

TEST_CASE("a character missing from the vocabulary falls back to bytes and decodes exactly") {
  const auto& t = llama2();
  const Ids ids = t.encode("a🦙b", false);
  CHECK(ids == Ids{263, 243, 162, 169, 156, 29890});
  for (const int32_t id : {243, 162, 169, 156}) CHECK(t.is_byte(id));
  CHECK_FALSE(t.is_byte(263));
  CHECK(t.decode(ids) == "a🦙b");
  // The byte pieces concatenated are the UTF-8 of the llama.
  std::string bytes;
  for (const int32_t id : {243, 162, 169, 156}) bytes += t.id_to_piece(id);
  CHECK(bytes == "🦙");
}

TEST_CASE("id_to_piece gives each piece's text as it appears in decoded output") {
  const auto& t = llama2();
  CHECK(t.id_to_piece(15043) == " Hello");
  CHECK(t.id_to_piece(3186) == " world");
  CHECK(t.id_to_piece(29889) == ".");
  CHECK(t.id_to_piece(13) == "\n");                 // <0x0A>
  CHECK(t.id_to_piece(3) == std::string(1, '\0'));  // <0x00>
  CHECK(t.id_to_piece(1).empty());                  // <s>
  CHECK(t.id_to_piece(2).empty());                  // </s>
  CHECK(t.id_to_piece(0) == t.decode(Ids{0}));      // <unk> prints its surface
  CHECK_FALSE(t.id_to_piece(0).empty());
}

TEST_CASE("ids outside the vocabulary are invalid_argument") {
  const auto& t = llama2();
  check_error([&] { t.decode(Ids{15043, 32000}); }, ErrorCode::invalid_argument, "32000");
  check_error([&] { t.decode(Ids{-1}); }, ErrorCode::invalid_argument, "-1");
  check_error([&] { t.id_to_piece(32000); }, ErrorCode::invalid_argument, "32000");
  check_error([&] { t.is_byte(32001); }, ErrorCode::invalid_argument, "32001");
}

TEST_CASE("encode and decode agree across threads") {
  const auto& t = llama2();
  const std::string text = "Concurrent callers share one tokenizer: 你好 🦙 café.";
  const Ids expected = t.encode(text, true);
  std::vector<int> mismatches(2, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 200; ++i) {
        const Ids ids = t.encode(text, true);
        if (ids != expected || t.decode(ids) != text) ++mismatches[static_cast<size_t>(w)];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(mismatches == std::vector<int>{0, 0});
}

TEST_CASE("load_tokenizer takes BOS/EOS from generation_config.json") {
  TempDir dir;
  make_model_dir(dir.path, R"({"bos_token_id": 1, "eos_token_id": [2, 7], "do_sample": true})");
  const auto t = specd::load_tokenizer(dir.path);
  CHECK(t->vocab_size() == 32000);
  CHECK(t->bos_id() == 1);
  CHECK(t->eos_ids() == Ids{2, 7});
  CHECK(t->encode("Hello world", true) == Ids{1, 15043, 3186});
}

TEST_CASE("generation_config.json wins over config.json, which wins over the model") {
  TempDir both;
  make_model_dir(both.path, R"({"eos_token_id": 9})",
                 R"({"bos_token_id": 5, "eos_token_id": [3, 4], "rope_scaling": null})");
  const auto t = specd::load_tokenizer(both.path);
  CHECK(t->bos_id() == 5);
  CHECK(t->eos_ids() == Ids{9});

  TempDir config_only;
  make_model_dir(config_only.path, "", R"({"eos_token_id": 4, "hidden_size": 64})");
  const auto c = specd::load_tokenizer(config_only.path);
  CHECK(c->bos_id() == 1);
  CHECK(c->eos_ids() == Ids{4});

  TempDir nulls;
  make_model_dir(nulls.path, R"({"bos_token_id": null, "eos_token_id": null})");
  const auto n = specd::load_tokenizer(nulls.path);
  CHECK(n->bos_id() == 1);
  CHECK(n->eos_ids() == Ids{2});
}

TEST_CASE("malformed generation_config.json is malformed_json") {
  for (const char* json :
       {R"({"eos_token_id": [2, 7)", R"({"eos_token_id": 2,})", R"({"other": tru, "eos_token_id": 2})",
        R"({"nested": {"a": [1,}})", R"({"eos_token_id": 2} trailing)", "", "[2, 7]"}) {
    const std::string text = json;
    CAPTURE(text);
    check_generation_config_error(json, ErrorCode::malformed_json);
  }
}

TEST_CASE("special ids of the wrong type or outside the vocabulary are bad_value") {
  for (const char* json : {R"({"eos_token_id": "2"})", R"({"eos_token_id": [2, "x"]})", R"({"bos_token_id": -1})",
                           R"({"eos_token_id": [2, 32000]})", R"({"bos_token_id": 1.5})"}) {
    const std::string text = json;
    CAPTURE(text);
    check_generation_config_error(json, ErrorCode::bad_value);
  }
}

TEST_CASE("load_tokenizer reports missing directories and tokenizer files") {
  TempDir dir;
  const std::string absent = (dir.path / "absent").string();
  check_error([&] { specd::load_tokenizer(absent); }, ErrorCode::missing_file, absent);
  check_error([&] { specd::load_tokenizer(dir.path); }, ErrorCode::missing_file, dir.path.string());
  // tokenizer.json is read by the BPE tokenizer now; an empty one lacks its model.
  write_file(dir.path / "tokenizer.json", "{}");
  check_error([&] { specd::load_tokenizer(dir.path); }, ErrorCode::missing_field, "tokenizer.json");
  check_error([&] { SentencePieceTokenizer t(absent + ".model"); }, ErrorCode::missing_file, absent + ".model");
}

TEST_CASE("a file that is not a SentencePiece model is tokenizer_error") {
  TempDir dir;
  for (const std::string& garbage :
       {std::string("this is not a protobuf \xff\xfe\x01\x02", 27), std::string(), std::string(4096, 'z')}) {
    write_file(dir.path / "tokenizer.model", garbage);
    check_error([&] { specd::load_tokenizer(dir.path); }, ErrorCode::tokenizer_error,
                (dir.path / "tokenizer.model").string());
  }
}

TEST_CASE("train_sentencepiece trains a small BPE model that loads and round-trips") {
  TempDir dir;
  std::ifstream in(kShakespeare, std::ios::binary);
  REQUIRE(in.good());
  std::string corpus(8192, '\0');
  in.read(corpus.data(), static_cast<std::streamsize>(corpus.size()));
  corpus.resize(static_cast<size_t>(in.gcount()));
  REQUIRE(corpus.size() == 8192);
  write_file(dir.path / "corpus.txt", corpus);

  const fs::path prefix = dir.path / "tiny";
  specd::train_sentencepiece("--input=" + (dir.path / "corpus.txt").string() + " --model_prefix=" + prefix.string() +
                             " --vocab_size=320 --model_type=bpe --byte_fallback=true"
                             // Llama 2's settings: keep text as is, so newlines and runs
                             // of spaces round-trip (through byte fallback).
                             " --normalization_rule_name=identity --remove_extra_whitespaces=false"
                             " --character_coverage=1.0 --input_sentence_size=2000"
                             " --shuffle_input_sentence=false --num_threads=1 --minloglevel=2");
  REQUIRE(fs::exists(prefix.string() + ".model"));

  const SentencePieceTokenizer t(prefix.string() + ".model");
  CHECK(t.vocab_size() == 320);
  CHECK(t.bos_id() == 1);
  CHECK(t.eos_ids() == Ids{2});
  const std::string seen = "First Citizen:\nBefore we proceed  any further, hear me speak.";
  const Ids ids = t.encode(seen, false);
  CHECK(ids.size() < seen.size());  // merges were learnt
  CHECK(t.decode(ids) == seen);
  // Characters never seen in training come back through byte fallback.
  const std::string unseen = "Zoë says 你好 🦙";
  CHECK(t.decode(t.encode(unseen, true)) == unseen);
}

TEST_CASE("train_sentencepiece reports bad arguments as tokenizer_error") {
  TempDir dir;
  const std::string input = (dir.path / "absent.txt").string();
  check_error(
      [&] {
        specd::train_sentencepiece("--input=" + input + " --model_prefix=" + (dir.path / "m").string() +
                                   " --vocab_size=300 --minloglevel=2");
      },
      ErrorCode::tokenizer_error, input);
  check_error([&] { specd::train_sentencepiece("--no_such_flag=1"); }, ErrorCode::tokenizer_error, "no_such_flag");
}
