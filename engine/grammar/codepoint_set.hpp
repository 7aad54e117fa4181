#pragma once
// Sets of Unicode code points (GBNF and regex character classes, JSON string
// characters) and their UTF-8 encoding as sequences of byte ranges, so that a class
// compiles to byte edges. Plain values; any thread.
#include <array>
#include <cstdint>
#include <vector>

namespace specd::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
};

// One UTF-8 encoded range: bytes[i] in [lo[i], hi[i]] for i < length.
struct Utf8Sequence {
  int length = 0;
  std::array<uint8_t, 4> lo{};
  std::array<uint8_t, 4> hi{};
};

class CodepointSet {
 public:
  CodepointSet() = default;
  static CodepointSet all();  // every scalar value (surrogates excluded)
  void add(uint32_t lo, uint32_t hi);
  void add(uint32_t codepoint) { add(codepoint, codepoint); }
  void add(const CodepointSet& other);
  void subtract(const CodepointSet& other);
  CodepointSet complement() const;  // within all()
  bool contains(uint32_t codepoint) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<CodepointRange>& ranges() const { return ranges_; }
  // The set's UTF-8 encodings as byte-range sequences, disjoint, surrogates excluded.
  std::vector<Utf8Sequence> utf8_sequences() const;

 private:
  void normalize();
  std::vector<CodepointRange> ranges_;  // sorted, disjoint, not adjacent
};

}  // namespace specd::grammar
