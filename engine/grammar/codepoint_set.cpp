#include "engine/grammar/codepoint_set.hpp"

#include <algorithm>

namespace specd::grammar {
namespace {

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::array<uint8_t, 4> utf8_bytes(uint32_t cp) {
  std::array<uint8_t, 4> out{};
  switch (utf8_length(cp)) {
    case 1:
      out[0] = static_cast<uint8_t>(cp);
      break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
  return out;
}

// Splits [lo, hi] (one encoded length) until every piece is a product of byte ranges:
// the usual construction (as in RE2's and Rust's utf8-ranges), written from the idea.
void split_same_length(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  const int length = utf8_length(lo);
  for (int i = 1; i < length; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        split_same_length(lo, lo | mask, out);
        split_same_length((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        split_same_length(lo, (hi & ~mask) - 1, out);
        split_same_length(hi & ~mask, hi, out);
        return;
      }
    }
  }
  Utf8Sequence seq;
  seq.length = length;
  seq.lo = utf8_bytes(lo);
  seq.hi = utf8_bytes(hi);
  out.push_back(seq);
}

}  // namespace

CodepointSet CodepointSet::all() {
  CodepointSet set;
  set.ranges_ = {{0, 0xD7FF}, {0xE000, kMaxCodepoint}};
  return set;
}

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  ranges_.push_back({lo, std::min(hi, kMaxCodepoint)});
  normalize();
}

void CodepointSet::add(const CodepointSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CodepointSet::subtract(const CodepointSet& other) {
  CodepointSet kept = other.complement();
  std::vector<CodepointRange> out;
  for (const auto& a : ranges_) {
    for (const auto& b : kept.ranges_) {
      const uint32_t lo = std::max(a.lo, b.lo);
      const uint32_t hi = std::min(a.hi, b.hi);
      if (lo <= hi) out.push_back({lo, hi});
    }
  }
  ranges_ = std::move(out);
  normalize();
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& r : ranges_) {
    if (r.lo > next) out.ranges_.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.push_back({next, kMaxCodepoint});
  CodepointSet surrogates;
  surrogates.ranges_ = {{0xD800, 0xDFFF}};
  std::vector<CodepointRange> kept;
  for (const auto& r : out.ranges_) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      kept.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) kept.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) kept.push_back({0xE000, r.hi});
  }
  out.ranges_ = std::move(kept);
  return out;
}

bool CodepointSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp,
                             [](uint32_t v, const CodepointRange& r) { return v < r.lo; });
  return it != ranges_.begin() && std::prev(it)->hi >= cp;
}

void CodepointSet::normalize() {
  std::sort(ranges_.begin(), ranges_.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
  std::vector<CodepointRange> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

std::vector<Utf8Sequence> CodepointSet::utf8_sequences() const {
  static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  std::vector<Utf8Sequence> out;
  for (const auto& r : ranges_) {
    for (uint32_t lo = r.lo; lo <= r.hi;) {
      if (lo >= 0xD800 && lo <= 0xDFFF) {
        lo = 0xE000;
        continue;
      }
      uint32_t hi = r.hi;
      for (uint32_t end : kLengthEnds) {
        if (lo <= end) {
          hi = std::min(hi, end);
          break;
        }
      }
      if (lo < 0xD800 && hi >= 0xD800) hi = 0xD7FF;
      split_same_length(lo, hi, out);
      lo = hi + 1;
    }
  }
  return out;
}

}  // namespace specd::grammar
