#include "engine/speculation/draft_compat.hpp"

#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

namespace {

std::string id_list(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return "[" + s + "]";
}

}  // namespace

void check_draft_compatible(const std::filesystem::path& target_dir, const ModelConfig& target,
                            const Tokenizer& target_tok, const std::filesystem::path& draft_dir,
                            const ModelConfig& draft, const Tokenizer& draft_tok) {
  auto mismatch = [&](const std::string& what, const std::string& target_value, const std::string& draft_value) {
    throw SpecdError(ErrorCode::bad_value, "draft " + draft_dir.string() + " is not compatible with target " +
                                               target_dir.string() + ": " + what + " " + draft_value + " (draft) vs " +
                                               target_value + " (target)");
  };
  if (target.vocab_size != draft.vocab_size) {
    mismatch("vocab_size", std::to_string(target.vocab_size), std::to_string(draft.vocab_size));
  }
  if (target_tok.vocab_size() != draft_tok.vocab_size()) {
    mismatch("tokenizer vocabulary", std::to_string(target_tok.vocab_size()), std::to_string(draft_tok.vocab_size()));
  }
  if (target_tok.bos_id() != draft_tok.bos_id()) {
    mismatch("bos id", std::to_string(target_tok.bos_id().value_or(-1)),
             std::to_string(draft_tok.bos_id().value_or(-1)));
  }
  if (target_tok.eos_ids() != draft_tok.eos_ids()) {
    mismatch("eos ids", id_list(target_tok.eos_ids()), id_list(draft_tok.eos_ids()));
  }
}

}  // namespace specd
