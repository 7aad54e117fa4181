// Byte-level BPE tokenizers from GGUF metadata ("gpt2" with tokenizer.ggml.pre
// "llama-bpe"): the Llama 3 vocabulary written as convert_hf_to_gguf.py writes it encodes
// every fixture text to the reference implementation's ids, with Llama 3's special ids
// and chat template; pre-tokenizers specd does not implement are refused by name.
#include "engine/tokenizer/gguf_tokenizer.hpp"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <filesystem>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "engine/tokenizer/tokenizer_config.hpp"
#include "tests/support/gguf_writer.hpp"

namespace fs = std::filesystem;
using namespace specd;
using specd::testing::GgufWriter;

namespace {

const fs::path kLlama3Dir = SPECD_LLAMA3_TOKENIZER_DIR;
const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "tests/data/llama3_tokenizer_fixtures.json";

// The Llama 3 tokenizer as a GGUF's metadata: every token by id (added tokens typed
// control or user-defined), merges as "left right", and `pre`.
GgufWriter llama3_gguf(const std::string& pre) {
  const fs::path json = kLlama3Dir / "tokenizer.json";
  REQUIRE_MESSAGE(fs::exists(json),
                  "missing " << json << ": run scripts/fetch_llama3_tokenizer.sh (scripts/setup.sh does)");
  const BpeTokenizerFile parts = read_bpe_tokenizer_file(json);
  std::vector<std::string> tokens(parts.vocab.size() + parts.added_tokens.size());
  std::vector<int32_t> types(tokens.size(), 1);
  for (const auto& [text, id] : parts.vocab) tokens.at(static_cast<size_t>(id)) = text;
  for (const AddedTokenSpec& t : parts.added_tokens) {
    tokens.at(static_cast<size_t>(t.id)) = t.content;
    types.at(static_cast<size_t>(t.id)) = t.special ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const auto& [left, right] : parts.merges) merges.push_back(left + " " + right);
  const TokenizerConfig config = read_tokenizer_config(kLlama3Dir / "tokenizer_config.json");
  GgufWriter w;
  w.string("general.architecture", "llama").string("tokenizer.ggml.model", "gpt2").string("tokenizer.ggml.pre", pre);
  w.strings("tokenizer.ggml.tokens", tokens).i32s("tokenizer.ggml.token_type", types);
  w.strings("tokenizer.ggml.merges", merges);
  w.u32("tokenizer.ggml.bos_token_id", 128000).u32("tokenizer.ggml.eos_token_id", 128001);
  w.u32("tokenizer.ggml.eot_token_id", 128009).boolean("tokenizer.ggml.add_bos_token", true);
  w.string("tokenizer.chat_template", config.chat_template.value_or(""));
  return w;
}

class TempFile {
 public:
  explicit TempFile(const std::string& name) : path_(fs::temp_directory_path() / name) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

TEST_CASE("a Llama 3 GGUF vocabulary encodes every fixture text to the reference ids") {
  TempFile file("specd_gguf_llama3.gguf");
  llama3_gguf("llama-bpe").write(file.path());
  const auto tok = load_tokenizer(file.path());
  CHECK(tok->vocab_size() == 128256);
  CHECK(tok->bos_id() == 128000);
  CHECK(tok->eos_ids() == std::vector<int32_t>{128001, 128009});
  simdjson::dom::parser parser;
  int cases = 0;
  for (simdjson::dom::element c : parser.load(kFixtures.string())["cases"].get_array()) {
    const std::string text{std::string_view(c["text"])};
    std::vector<int32_t> ids;
    for (int64_t id : c["ids"].get_array()) ids.push_back(static_cast<int32_t>(id));
    INFO(text);
    CHECK(tok->encode(text, false) == ids);
    CHECK(tok->decode(ids) == text);
    ++cases;
  }
  CHECK(cases > 10);
  CHECK(tok->encode("<|start_header_id|>user<|end_header_id|>", true) ==
        std::vector<int32_t>{128000, 128006, 882, 128007});
  // The GGUF's template renders as the tokenizer_config.json's it was made from.
  const ChatTemplate chat = ChatTemplate::from_model_dir(file.path());
  const std::vector<ChatMessage> messages{{"system", "Be brief."}, {"user", "Hi"}};
  CHECK(chat.origin() == file.path().string() + " tokenizer.chat_template");
  CHECK(chat.render(messages) == ChatTemplate::from_model_dir(kLlama3Dir).render(messages));
}

TEST_CASE("BPE pre-tokenizers and tokenizer models specd does not implement are refused by name") {
  TempFile file("specd_gguf_other_pre.gguf");
  // qwen2 splits digits one by one where llama-bpe keeps up to three together.
  llama3_gguf("qwen2").write(file.path());
  CHECK(load_tokenizer(file.path())->encode("12345", false).size() == 5);
  llama3_gguf("llama-bpe").write(file.path());
  CHECK(load_tokenizer(file.path())->encode("12345", false).size() == 2);
  llama3_gguf("deepseek-llm").write(file.path());
  try {
    (void)load_tokenizer(file.path());
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(e.message() == file.path().string() +
                             ": tokenizer.ggml.pre is 'deepseek-llm'; specd reads 'llama-bpe' (Llama 3), 'qwen2' "
                             "(Qwen2, Qwen3) and 'gpt-2' BPE tokenizers");
  }
  GgufWriter t5;
  t5.string("tokenizer.ggml.model", "t5").strings("tokenizer.ggml.tokens", {"a"});
  t5.write(file.path());
  try {
    (void)load_tokenizer(file.path());
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::unsupported_architecture);
    CHECK(e.message().find("tokenizer.ggml.model is 't5'") != std::string::npos);
  }
}
