#pragma once
// Why a request's generation ended (the OpenAI wire names: "stop", "length", ...), and
// the one rule that composes it from everything that can end a request.
#include <optional>

namespace specd {

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason reason);

// What ended a request, as far as each party knows it.
struct FinishCauses {
  bool failed = false;                  // an error: a model call, a sink too slow for its bursts
  bool cancelled = false;               // the caller cancelled (or dropped its handle)
  std::optional<FinishReason> decided;  // the request's output: EOS, stop string, max_tokens, full cache
};

// In precedence order: a failure is `error`, then a cancel, then what the output
// decided, and otherwise `fallback`.
FinishReason compose_finish_reason(const FinishCauses& causes, FinishReason fallback);

}  // namespace specd
