#include "engine/tokenizer/pretokenizer_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/base/errors.hpp"

namespace specd {

struct PretokenizerRegex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

PretokenizerRegex::PretokenizerRegex(const std::string& pattern) : pattern_(pattern), code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UCP makes \s, \w and case folding Unicode-aware, as in the Rust/Oniguruma regex
  // HF tokenizers uses.
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (code_->code == nullptr) {
    throw SpecdError(ErrorCode::tokenizer_error, "pre-tokenizer regex does not compile at offset " +
                                                     std::to_string(offset) + ": " + pcre2_message(error) +
                                                     " (pattern " + pattern + ")");
  }
  // JIT is several times faster; without it (error) PCRE2 falls back to the interpreter.
  (void)pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);
}

PretokenizerRegex::~PretokenizerRegex() = default;

void PretokenizerRegex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  // Match data per call keeps the object usable from several threads at once.
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  // The UTF check scans the whole subject; do it once, not per match.
  uint32_t options = 0;
  while (start < text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), start, options, data.get(), nullptr);
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw SpecdError(ErrorCode::tokenizer_error, "cannot pre-tokenize text: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > start) pieces.push_back(text.substr(start, begin - start));
    if (end == begin) {
      // An empty match: advance by one character so the loop always progresses.
      size_t next = begin + 1;
      while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      if (next > begin) pieces.push_back(text.substr(begin, next - begin));
      start = next;
      continue;
    }
    pieces.push_back(text.substr(begin, end - begin));
    start = end;
  }
  if (start < text.size()) pieces.push_back(text.substr(start));
}

}  // namespace specd
