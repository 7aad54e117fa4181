#pragma once
// The one request value: what a client asked for, parsed once at the edge (the gateway's
// protocol, the command line, an embedding program) and carried unchanged to the
// scheduler. The Engine alone turns its input into token ids and validates it against its
// limits (validate_request). Plain values, torch-free; any thread.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/request/sampling_params.hpp"
#include "engine/request/sequence_limits.hpp"
#include "engine/request/spec_settings.hpp"
#include "engine/tokenizer/chat_template.hpp"

namespace specd {

// Structured output: the generated tokens follow a grammar (engine/grammar), compiled by
// the engine against the target's vocabulary. A text it cannot compile is a bad_value
// naming what it could not handle.
struct OutputGrammar {
  enum class Kind { none, json_object, json_schema, gbnf };
  Kind kind = Kind::none;
  std::string text;  // the JSON Schema or the GBNF text (empty for json_object)
};

struct GenerateRequest {
  std::string id;  // unique among requests in flight; empty: the engine assigns one
  // The input, exactly one of: text (tokenized with the target's tokenizer, BOS added),
  // a conversation (rendered with the target's chat template), or token ids as they are.
  std::string prompt;
  std::vector<ChatMessage> messages;
  // The request's tools (a JSON array, OpenAI's form) for the chat template's `tools`
  // variable; empty: none. Opaque to the engine: only the template reads it.
  std::string tools_json;
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
  int32_t max_tokens = 128;       // 0: the rest of the context, max_seq_len less the prompt (as vLLM)
  std::vector<std::string> stop;  // stop strings, matched on accepted text only
  SpecSettings spec;              // per request: on/off, K or adaptive, drafter
  OutputGrammar grammar;
  bool ignore_eos = false;  // keep generating past EOS (benchmarks)
  // false: the prompt is computed in full, not read from the prefix cache (llama.cpp's
  // name for the same switch).
  bool cache_prompt = true;
};

// What bounds a request in this engine.
struct RequestLimits {
  int32_t vocab_size = 0;
  SequenceLimits sequence;
};

// The one validation of a request, with its prompt's token ids: throws SpecdError
// (bad_value, out_of_capacity for a prompt that does not fit max_seq_len) naming the
// first bad field.
void validate_request(const GenerateRequest& request, std::span<const int32_t> prompt_ids, const RequestLimits& limits);

}  // namespace specd
