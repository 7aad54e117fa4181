#pragma once
// The scheduler's own records: a request as it waits, prefills and runs, and what a round
// gave back. Private to the scheduler's two files (scheduler_actor.cpp: the loop,
// scheduler_round.cpp: the round).
#include <memory>
#include <optional>
#include <vector>

#include "actors/request_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "engine/request/request_output.hpp"

namespace specd::actors {

struct SchedulerActor::Entry {
  std::shared_ptr<RequestActor> actor;
  GenerateRequest request;
  std::vector<int32_t> prompt;
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // structured output; null: free text
  RequestOutput output;                                     // decides when the request is finished
  std::unique_ptr<SpecSequence> seq;                        // from admission
  std::optional<SlotGrant> slots;                           // from admission to its end or preemption
  Clock::time_point admitted_at;                            // first admission (a preempted request keeps it)
  std::optional<RequestError> error;                        // the sink lagged (slow_consumer)
  int64_t prefilled = 0;                                    // prompt tokens in the target slot (chunked prefill)
  bool resuming = false;      // preempted after sending tokens: prefill them again, sample nothing
  int64_t cached_tokens = 0;  // prompt tokens the prefix cache held at its prefill
  int64_t chunks = 0;         // prefill chunks run (the trace's prefill span)
  bool finished() const { return output.finished() || error; }
  // The tokens its prefill writes: its prompt, or, resuming, all it had but g.
  int64_t prefill_length() const {
    return resuming ? static_cast<int64_t>(seq->tokens.size()) - 1 : static_cast<int64_t>(prompt.size());
  }
};

struct SchedulerActor::RoundOutcome {
  bool no_room = false;            // CacheManager could not lay the round out: nothing ran
  std::vector<Entry*> chunked;     // prefilling entries that prefilled a chunk, in order
  std::vector<int64_t> chunk_end;  // how far each one's prompt is in its slot now
  std::vector<int64_t> cached;     // prompt tokens each first chunk found cached (0 for later chunks)
  int64_t prompt_tokens = 0;       // prompt tokens the round's pass carried
  TargetPrefills prefills;         // one first token per chunk that completed its prompt
  LaneSpan draft_prefill;
  RoundResult round;  // one row per running entry
};

template <class Which>
void SchedulerActor::finish_where(Entries& entries, const Which& which, FinishReason reason,
                                  const RequestError* failure) {
  Entries keep;
  Entries leaving;
  for (auto& e : entries) {
    if (e) (which(*e) ? leaving : keep).push_back(std::move(e));  // null: moved to the batch
  }
  entries = std::move(keep);
  if (!leaving.empty()) end(leaving, reason, failure);
}

}  // namespace specd::actors
