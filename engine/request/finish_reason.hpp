#pragma once
// Why a request's generation ended (the OpenAI wire names: "stop", "length", ...).
namespace specd {

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason reason);

}  // namespace specd
