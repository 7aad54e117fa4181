#include "engine/speculation/spec_request.hpp"

#include <algorithm>
#include <string>

#include "engine/base/errors.hpp"

namespace specd {

void validate_request(const SpecRequest& r, int32_t vocab_size, int64_t max_seq_len, bool has_tokenizer) {
  validate(r.sampling);
  if (!r.stop.empty() && !has_tokenizer) {
    throw SpecdError(ErrorCode::invalid_argument, "stop strings need a tokenizer to match text");
  }
  for (const auto& s : r.stop) {
    if (s.empty()) throw SpecdError(ErrorCode::invalid_argument, "a stop string is empty");
  }
  if (r.prompt.empty()) throw SpecdError(ErrorCode::invalid_argument, "the prompt has no tokens");
  if (r.max_tokens < 1) throw SpecdError(ErrorCode::invalid_argument, "max_tokens must be >= 1");
  if (r.spec.k < 0 || r.spec.k_max < 0) throw SpecdError(ErrorCode::invalid_argument, "K must be >= 0");
  if (static_cast<int64_t>(r.prompt.size()) >= max_seq_len) {
    throw SpecdError(ErrorCode::out_of_capacity, "prompt of " + std::to_string(r.prompt.size()) +
                                                     " tokens does not fit max_seq_len " + std::to_string(max_seq_len));
  }
  for (int32_t id : r.prompt) {
    if (id < 0 || id >= vocab_size)
      throw SpecdError(ErrorCode::invalid_argument, "prompt id " + std::to_string(id) + " outside the vocabulary");
  }
}

}  // namespace specd
