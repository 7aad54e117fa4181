#include "engine/base/errors.hpp"

namespace specd {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::missing_file:
      return "missing_file";
    case ErrorCode::malformed_json:
      return "malformed_json";
    case ErrorCode::malformed_toml:
      return "malformed_toml";
    case ErrorCode::missing_field:
      return "missing_field";
    case ErrorCode::bad_value:
      return "bad_value";
    case ErrorCode::unsupported_architecture:
      return "unsupported_architecture";
    case ErrorCode::missing_tensor:
      return "missing_tensor";
    case ErrorCode::shape_mismatch:
      return "shape_mismatch";
    case ErrorCode::unsupported_dtype:
      return "unsupported_dtype";
    case ErrorCode::truncated_file:
      return "truncated_file";
    case ErrorCode::tokenizer_error:
      return "tokenizer_error";
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::out_of_capacity:
      return "out_of_capacity";
    case ErrorCode::overloaded:
      return "overloaded";
    case ErrorCode::shutting_down:
      return "shutting_down";
    case ErrorCode::slow_consumer:
      return "slow_consumer";
    case ErrorCode::duplicate_id:
      return "duplicate_id";
    case ErrorCode::internal:
      return "internal";
    case ErrorCode::unknown_chat_template:
      return "unknown_chat_template";
  }
  return "unknown";
}

}  // namespace specd
