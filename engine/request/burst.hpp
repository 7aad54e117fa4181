#pragma once
// A burst: one round's output to one request, from the request's RequestOutput (which
// cuts it at a stop condition and turns it into text) through its RequestActor to the
// caller's burst handler. Part of the embedding API (actors/generate_result.hpp).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/request/token_logprobs.hpp"

namespace specd {

// One round's accepted tokens for one request.
struct Burst {
  std::string id;
  std::vector<int32_t> token_ids;  // empty only in a final burst carrying held-back text
  std::string text;                // complete UTF-8 characters only; the rest follows later
  // Draft tokens proposed this round, and how many of them the target accepted. A burst
  // that a stop condition cut inside its drafts counts only the drafts it kept.
  int32_t drafted = 0;
  int32_t accepted = 0;
  // Per token_ids entry, the text that token completed (empty when it ends inside a
  // UTF-8 character). Their concatenation may run ahead of `text`, which holds back what
  // could start a stop string; clients colour tokens with it (draft vs target).
  std::vector<std::string> pieces;
  // Per token_ids entry, its log-probabilities, when the request asked for them.
  std::vector<TokenLogprobs> logprobs;
  // Null when nothing waits for the write. A sink that writes the burst to a client
  // calls it once that write completed (the trace's `written_us`); a sink that does not
  // write the burst drops it.
  std::function<void()> on_written;
};

}  // namespace specd
