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

}  // namespace specd
