#pragma once
// The pre-tokenizer split of HF `tokenizer.json` (Split with behavior "Isolated"):
// a Unicode regex cuts text into words before BPE. Backed by PCRE2 (Debian's
// libpcre2-dev) with UTF + UCP, because std::regex has no \p{L} / \p{N} classes and
// PCRE2 supports the full Llama 3 pattern (inline (?i:...), lookahead (?!\S)) as is.
// Immutable after construction; safe to call from any thread.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

class PretokenizerRegex {
 public:
  // Throws SpecdError(tokenizer_error) when the pattern does not compile.
  explicit PretokenizerRegex(const std::string& pattern);
  ~PretokenizerRegex();
  PretokenizerRegex(const PretokenizerRegex&) = delete;
  PretokenizerRegex& operator=(const PretokenizerRegex&) = delete;

  // Appends the pieces of text in order: every match, and any text between
  // matches as its own piece, so the pieces concatenate to text. Throws
  // SpecdError(tokenizer_error) when text is not valid UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

// The GPT-2 pattern that ByteLevel pre-tokenizers with use_regex apply.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3's (llama.cpp's "llama-bpe").
inline constexpr std::string_view kLlama3SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

// Qwen2's and Qwen3's (llama.cpp's "qwen2"): Llama 3's with single digits (\p{N}, not \p{N}{1,3}).
inline constexpr std::string_view kQwen2SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

}  // namespace specd
