#include "engine/request/finish_reason.hpp"

namespace specd {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
  }
  return "unknown";
}

FinishReason compose_finish_reason(const FinishCauses& causes, FinishReason fallback) {
  if (causes.failed) return FinishReason::error;
  if (causes.cancelled) return FinishReason::cancelled;
  return causes.decided.value_or(fallback);
}

}  // namespace specd
