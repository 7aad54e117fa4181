#pragma once
// GPT-2's byte-level alphabet (`bytes_to_unicode`): each of the 256 byte values maps
// to one printable Unicode character, so BPE vocabularies hold text strings only.
// Printable Latin-1 bytes map to themselves; the rest map to U+0100 onwards in byte
// order (space 0x20 becomes U+0120 'Ġ', newline 0x0A becomes U+010A 'Ċ').
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/base/utf8.hpp"

namespace specd {

// The code point that byte b is written as.
char32_t byte_to_code_point(uint8_t b);

// The UTF-8 text of the byte-level string of raw bytes.
std::string bytes_to_byte_level(std::string_view bytes);

// The raw bytes a byte-level string stands for; nullopt when it contains a
// character outside the alphabet (or is not valid UTF-8).
std::optional<std::string> byte_level_to_bytes(std::string_view text);

// Replaces each maximal invalid UTF-8 subsequence with U+FFFD, as Rust's
// String::from_utf8_lossy and the WHATWG TextDecoder do.
std::string utf8_lossy(std::string_view bytes);

}  // namespace specd
