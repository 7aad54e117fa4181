#include "engine/tokenizer/stream_detokenizer.hpp"

#include <span>

#include "engine/tokenizer/tokenizer.hpp"

namespace specd {

namespace {

bool ends_with_replacement(const std::string& s) {
  static const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD: bytes of an unfinished character
  return s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0;
}

}  // namespace

std::string StreamDetokenizer::decode_from(size_t begin, size_t end) const {
  return tokenizer_.decode(std::span<const int32_t>(tokens_).subspan(begin, end - begin));
}

std::string StreamDetokenizer::push(int32_t token) {
  tokens_.push_back(token);
  // Both texts are decoded from the same first token, so whatever the tokenizer does
  // at the start of a decode (e.g. dropping a leading space) affects them alike.
  const std::string before = decode_from(prefix_offset_, read_offset_);
  const std::string now = decode_from(prefix_offset_, tokens_.size());
  if (now.size() <= before.size() || ends_with_replacement(now) || now.compare(0, before.size(), before) != 0) {
    return {};
  }
  prefix_offset_ = read_offset_;
  read_offset_ = tokens_.size();
  return now.substr(before.size());
}

std::string StreamDetokenizer::flush() {
  const std::string before = decode_from(prefix_offset_, read_offset_);
  const std::string now = decode_from(prefix_offset_, tokens_.size());
  prefix_offset_ = read_offset_ = tokens_.size();
  return now.size() > before.size() && now.compare(0, before.size(), before) == 0 ? now.substr(before.size())
                                                                                  : std::string();
}

}  // namespace specd
