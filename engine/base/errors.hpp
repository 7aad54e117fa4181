#pragma once
// Errors raised by engine/ for bad input from files or callers. Each carries a stable
// code (for logs, CLI exit messages and, later, protocol error frames) and a message
// that names the file and the problem.
#include <stdexcept>
#include <string>

namespace specd {

enum class ErrorCode {
  missing_file,
  malformed_json,
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
  // Gateway (net/) refusals of a client's input or connection.
  unknown_type,          // a protocol message of a type the server does not know
  unknown_id,            // cancel of an id neither in flight nor recently finished on this connection
  invalid_utf8,          // a text frame or body that is not valid UTF-8
  binary_frame,          // the protocol is JSON text frames only
  frame_too_large,       // a frame or body above the configured limit
  too_many_requests,     // a connection's in-flight requests at the configured limit
  too_many_connections,  // the server's connections at the configured limit
  unauthorized,          // missing or wrong bearer token
  not_found,             // no such route or file
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
