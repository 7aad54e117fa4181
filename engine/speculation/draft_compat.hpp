#pragma once
// A draft can only propose tokens for a target that reads them the same way: same
// vocabulary size in the model and the tokenizer, same BOS and EOS ids.
#include <filesystem>

namespace specd {

struct ModelConfig;
class Tokenizer;

// Throws SpecdError(bad_value) naming both directories and the first difference.
void check_draft_compatible(const std::filesystem::path& target_dir, const ModelConfig& target,
                            const Tokenizer& target_tokenizer, const std::filesystem::path& draft_dir,
                            const ModelConfig& draft, const Tokenizer& draft_tokenizer);

}  // namespace specd
