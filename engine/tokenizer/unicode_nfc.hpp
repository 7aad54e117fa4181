#pragma once
// Unicode NFC, the normalizer of Qwen2's and Qwen3's tokenizer.json (HF tokenizers applies
// it to the text between added tokens, before the pre-tokenizer). Backed by ICU (Debian's
// libicu-dev): composition tables are not something to write by hand. Any thread.
#include <string>
#include <string_view>

namespace specd {

// The NFC form of UTF-8 text; text already in NFC (most text) comes back unchanged.
// Throws SpecdError(tokenizer_error) for invalid UTF-8.
std::string to_nfc(std::string_view utf8);

}  // namespace specd
