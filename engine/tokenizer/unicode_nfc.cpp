#include "engine/tokenizer/unicode_nfc.hpp"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "engine/base/errors.hpp"

namespace specd {

std::string to_nfc(std::string_view utf8) {
  bool ascii = true;
  for (const char c : utf8) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(utf8);  // ASCII is NFC: skip the UTF-16 round trip
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status))
    throw SpecdError(ErrorCode::tokenizer_error, "ICU has no NFC data: " + std::string(u_errorName(status)));
  // ICU maps invalid UTF-8 to U+FFFD silently; the tokenizer must not.
  const icu::UnicodeString text =
      icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size())));
  std::string back;
  text.toUTF8String(back);
  if (back != utf8) throw SpecdError(ErrorCode::tokenizer_error, "cannot normalize text: it is not valid UTF-8");
  if (nfc->isNormalized(text, status) && U_SUCCESS(status)) return back;
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = nfc->normalize(text, status);
  if (U_FAILURE(status))
    throw SpecdError(ErrorCode::tokenizer_error, "NFC failed: " + std::string(u_errorName(status)));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

}  // namespace specd
