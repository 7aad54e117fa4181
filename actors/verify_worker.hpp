#pragma once
// VerifyWorker: the target model's actor. It takes the scheduler's jobs (target
// prefill of newly admitted prompts, which yields their first tokens; the one batched
// verify pass of a round with accept/reject) and runs them on the target lane, one at
// a time; its strand only waits. Lives on its strand.
#include <cstdint>
#include <variant>
#include <vector>

#include "actors/asio_aliases.hpp"
#include "actors/reply.hpp"
#include "engine/speculation/speculative_round.hpp"

namespace specd {
class ComputeLane;
}

namespace specd::actors {

class VerifyWorker {
 public:
  struct Verify {
    RoundDrafts drafts;
    Reply<RoundResult> reply;
  };
  struct Prefill {
    std::vector<SpecSequence*> seqs;
    Reply<std::vector<int32_t>> reply;
  };
  struct PlainStep {  // a round in which no row drafts: one batched target step
    std::vector<SpecSequence*> batch;
    Reply<RoundResult> reply;
  };
  struct Stop {
    Reply<std::monostate> reply;
  };
  // monostate first: a channel default-constructs the message when it cancels a receive.
  using Message = std::variant<std::monostate, Verify, Prefill, PlainStep, Stop>;

  VerifyWorker(asio::any_io_executor strand, ComputeLane& lane, SpecModels models);

  awaitable<void> run();
  asio::any_io_executor executor() const { return strand_; }

  // Asked from the scheduler's coroutine; empty inputs are answered without the lane.
  // References, as in DraftWorker; verify() moves the drafts into its job.
  awaitable<RoundResult> verify(RoundDrafts& drafts);
  awaitable<std::vector<int32_t>> prefill(const std::vector<SpecSequence*>& seqs);  // first tokens
  // The whole round on the target lane, without a trip to the draft worker; only for a
  // batch in which no row drafts (every row's drafts_nothing()).
  awaitable<RoundResult> plain_step(const std::vector<SpecSequence*>& batch);
  awaitable<void> stop();

 private:
  awaitable<void> handle(Verify& m);
  awaitable<void> handle(Prefill& m);
  awaitable<void> handle(PlainStep& m);

  asio::any_io_executor strand_;
  ComputeLane& lane_;
  SpecModels models_;
  Mailbox<Message> mailbox_;
};

}  // namespace specd::actors
