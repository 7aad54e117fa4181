#pragma once
// DraftWorker: the draft model's actor. It takes the scheduler's jobs (K batched
// draft steps for the running batch; prefill of newly admitted prompts) and runs them
// on the draft lane, one at a time; its strand only waits. Lives on its strand.
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/reply.hpp"
#include "engine/speculation/prefill.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {
class ComputeLane;
}

namespace specd::actors {

class DraftWorker {
 public:
  struct Propose {
    std::vector<SpecSequence*> batch;
    Reply<RoundDrafts> reply;
  };
  struct Prefill {
    std::vector<DraftPrefill> prompts;
    Reply<std::monostate> reply;
  };
  struct Stop {
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Propose, Prefill, Stop>;

  // `models` gives the draft model and cache (may be absent: lookup drafting only).
  DraftWorker(asio::any_io_executor strand, ComputeLane& lane, SpecModels models);

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // Asked from the scheduler's coroutine. An empty batch or prompt list is answered
  // without touching the lane.
  // Arguments are references: the caller's frame outlives the call, and no temporary
  // with a destructor is left in the caller's co_await expression.
  awaitable<RoundDrafts> propose(const std::vector<SpecSequence*>& batch);
  awaitable<void> prefill(const std::vector<DraftPrefill>& prompts);
  awaitable<void> stop();

 private:
  awaitable<void> handle(Propose& m);
  awaitable<void> handle(Prefill& m);

  asio::any_io_executor strand_;
  ComputeLane& lane_;
  SpecModels models_;
  Mailbox<Message> mailbox_;
};

}  // namespace specd::actors
