#include "engine/tokenizer/byte_level.hpp"

namespace specd {

namespace {

struct Tables {
  std::array<char32_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // code points used are < 0x144
};

bool printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    r.cp_to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      r.byte_to_cp[b] = printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      r.cp_to_byte[r.byte_to_cp[b]] = static_cast<int16_t>(b);
    }
    return r;
  }();
  return t;
}

// The sequence a lead byte starts: its length and the allowed range of its second
// byte (which rules out overlong forms, surrogates and values above U+10FFFF).
struct Lead {
  size_t len = 0;  // 0: not a lead byte
  unsigned char lo = 0x80, hi = 0xBF;
};

Lead lead_of(unsigned char c) {
  if (c < 0x80) return {1};
  if (c >= 0xC2 && c <= 0xDF) return {2};
  if (c == 0xE0) return {3, 0xA0};
  if (c == 0xED) return {3, 0x80, 0x9F};
  if (c >= 0xE1 && c <= 0xEF) return {3};
  if (c == 0xF0) return {4, 0x90};
  if (c >= 0xF1 && c <= 0xF3) return {4};
  if (c == 0xF4) return {4, 0x80, 0x8F};
  return {};
}

// How many bytes at s[i] form a valid prefix of the sequence their lead byte starts
// (at least 1): the whole sequence when valid, else one maximal subpart, which is
// what one U+FFFD replaces.
size_t prefix_length(std::string_view s, size_t i, const Lead& lead) {
  size_t k = 1;
  while (k < lead.len && i + k < s.size()) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    const bool ok = k == 1 ? (b >= lead.lo && b <= lead.hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++k;
  }
  return k;
}

}  // namespace

char32_t byte_to_code_point(uint8_t b) { return tables().byte_to_cp[b]; }

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char b : bytes) out += utf8_encode(byte_to_code_point(static_cast<uint8_t>(b)));
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c, i += 1;
    } else if ((c >> 5) == 0x6 && i + 1 < text.size()) {
      cp = ((c & 0x1F) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F), i += 2;
    } else {
      return std::nullopt;  // every character of the alphabet is at most 2 bytes long
    }
    if (cp >= tables().cp_to_byte.size() || tables().cp_to_byte[cp] < 0) return std::nullopt;
    out += static_cast<char>(tables().cp_to_byte[cp]);
  }
  return out;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Lead lead = lead_of(static_cast<unsigned char>(bytes[i]));
    const size_t len = prefix_length(bytes, i, lead);
    if (lead.len > 0 && len == lead.len) {
      out.append(bytes.substr(i, len));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += len;
  }
  return out;
}

}  // namespace specd
