// A draft that reads tokens differently from the target is refused with both names.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/speculation/draft_compat.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"
#include "engine/tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

const std::filesystem::path kModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";
const std::filesystem::path kLlama2 = std::filesystem::path(SPECD_SOURCE_DIR) / "../shared/data/llama2-tokenizer.model";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::bad_value);
    return e.what();
  }
  FAIL("no error");
  return {};
}

}  // namespace

TEST_CASE("the committed pair is compatible; a different vocabulary or EOS is refused naming both") {
  auto target_tok = load_tokenizer(kModels / "target");
  auto draft_tok = load_tokenizer(kModels / "draft");
  const ModelConfig target = load_model_config(kModels / "target" / "config.json");
  const ModelConfig draft = load_model_config(kModels / "draft" / "config.json");
  CHECK_NOTHROW(check_draft_compatible(kModels / "target", target, *target_tok, kModels / "draft", draft, *draft_tok));

  ModelConfig wide = draft;
  wide.vocab_size = 32000;
  std::string msg = error_of(
      [&] { check_draft_compatible(kModels / "target", target, *target_tok, "/tmp/other-draft", wide, *draft_tok); });
  CHECK(msg.find("/tmp/other-draft") != std::string::npos);
  CHECK(msg.find("models/target") != std::string::npos);
  CHECK(msg.find("32000") != std::string::npos);

  SentencePieceTokenizer llama2(kLlama2);
  msg = error_of(
      [&] { check_draft_compatible(kModels / "target", target, *target_tok, "/tmp/llama2-draft", draft, llama2); });
  CHECK(msg.find("tokenizer vocabulary 32000 (draft) vs 2048 (target)") != std::string::npos);

  SpecialIdOverrides other_eos;
  other_eos.eos = std::vector<int32_t>{2, 5};
  SentencePieceTokenizer target_with_more_eos(kModels / "target" / "tokenizer.model", other_eos);
  msg = error_of([&] {
    check_draft_compatible(kModels / "target", target, *target_tok, "/tmp/eos-draft", draft, target_with_more_eos);
  });
  CHECK(msg.find("eos ids [2,5] (draft) vs [2] (target)") != std::string::npos);
}
