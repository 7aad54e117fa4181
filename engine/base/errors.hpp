#pragma once
// Errors raised by engine/ for bad input from files or callers. Each carries a stable
// code (for logs, CLI exit messages and the gateway's error frames, which add their own
// codes in net/wire_error.hpp) and a message that names the file and the problem.
#include <stdexcept>
#include <string>

namespace specd {

enum class ErrorCode {
  missing_file,
  malformed_json,
  malformed_toml,  // a TOML file's syntax (the serve configuration)
  missing_field,
  bad_value,
  unsupported_architecture,
  missing_tensor,
  shape_mismatch,
  unsupported_dtype,
  truncated_file,
  tokenizer_error,
  invalid_argument,
  out_of_capacity,
  overloaded,     // the engine's waiting queue or mailbox is full: retry later
  shutting_down,  // the engine is stopping and takes no new requests
  slow_consumer,  // a request's sink fell too far behind its bursts
  duplicate_id,   // a request id already in flight
  internal,       // a model call failed; the engine keeps serving other requests
  unknown_chat_template,
};

const char* error_code_name(ErrorCode code);

class SpecdError : public std::runtime_error {
 public:
  SpecdError(ErrorCode code, const std::string& message)
      : std::runtime_error(std::string(error_code_name(code)) + ": " + message), code_(code), message_(message) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }  // what() without the code

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace specd
