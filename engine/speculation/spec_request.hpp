#pragma once
// A request as the scheduler runs it (token ids, sampling, limits, speculation) and its
// validation.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request/finish_reason.hpp"
#include "engine/request/sampling_params.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {

class Tokenizer;

struct SpecRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 128;
  std::vector<int32_t> eos_ids;
  std::vector<std::string> stop;  // stop strings; needs a tokenizer
  SpecSettings spec;
};

// Throws SpecdError naming the first bad field: sampling values, empty prompt or stop
// string, max_tokens < 1, negative K, ids outside the vocabulary, a prompt that does not
// fit max_seq_len (out_of_capacity), stop strings without a tokenizer.
void validate_request(const SpecRequest& request, int32_t vocab_size, int64_t max_seq_len, bool has_tokenizer);

}  // namespace specd
