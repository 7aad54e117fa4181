#include "actors/verify_worker.hpp"

#include "engine/base/errors.hpp"
#include "engine/speculation/prefill.hpp"
#include "gpu/compute_lane.hpp"

namespace specd::actors {

VerifyWorker::VerifyWorker(asio::any_io_executor strand, ComputeLane& lane, SpecModels models)
    : strand_(strand), lane_(lane), models_(models), mailbox_(strand, 16) {}

awaitable<void> VerifyWorker::run() {
  return serve_until_stop<Stop, Message>(mailbox_, [this](auto& message) { return handle(message); });
}

awaitable<void> VerifyWorker::handle(Verify& m) {
  try {
    auto job = [this, &m] { return verify_phase(models_, m.drafts); };  // m outlives the job
    RoundResult result = co_await lane_.run("verify", job);
    m.reply.set(std::move(result));
  } catch (...) {
    m.reply.fail(std::current_exception());
  }
}

awaitable<void> VerifyWorker::handle(Prefill& m) {
  try {
    auto job = [this, &m] { return prefill_target(models_.target, models_.target_cache, m.seqs); };
    std::vector<int32_t> first = co_await lane_.run("target prefill", job);
    m.reply.set(std::move(first));
  } catch (...) {
    m.reply.fail(std::current_exception());
  }
}

awaitable<void> VerifyWorker::handle(PlainStep& m) {
  try {
    // With every row at K = 0 the draft phase only sets up rows: no draft model call, no
    // draft cache access, so it may run on this lane.
    auto job = [this, &m] { return speculative_round(models_, m.batch); };
    RoundResult result = co_await lane_.run("verify", job);
    m.reply.set(std::move(result));
  } catch (...) {
    m.reply.fail(std::current_exception());
  }
}

awaitable<RoundResult> VerifyWorker::plain_step(const std::vector<SpecSequence*>& batch) {
  if (batch.empty()) co_return RoundResult{};
  for (const SpecSequence* seq : batch) {
    if (!drafts_nothing(*seq)) throw SpecdError(ErrorCode::internal, "plain_step: a row would draft");
  }
  co_return co_await ask<RoundResult>(mailbox_, [&batch](auto reply) { return PlainStep{batch, reply}; });
}

awaitable<RoundResult> VerifyWorker::verify(RoundDrafts& drafts) {
  if (drafts.rows.empty()) co_return RoundResult{};
  co_return co_await ask<RoundResult>(mailbox_, [&drafts](auto reply) { return Verify{std::move(drafts), reply}; });
}

awaitable<std::vector<int32_t>> VerifyWorker::prefill(const std::vector<SpecSequence*>& seqs) {
  if (seqs.empty()) co_return std::vector<int32_t>{};
  co_return co_await ask<std::vector<int32_t>>(mailbox_, [&seqs](auto reply) { return Prefill{seqs, reply}; });
}

awaitable<void> VerifyWorker::stop() {
  co_await ask<std::monostate>(mailbox_, [](auto reply) { return Stop{reply}; });
}

}  // namespace specd::actors
