#include "actors/draft_worker.hpp"

#include "gpu/compute_lane.hpp"

namespace specd::actors {

DraftWorker::DraftWorker(asio::any_io_executor strand, ComputeLane& lane, SpecModels models)
    : strand_(strand), lane_(lane), models_(models), mailbox_(strand, 16) {}

awaitable<void> DraftWorker::run() {
  return serve_until_stop<Stop, Message>(mailbox_, [this](auto& message) { return handle(message); });
}

awaitable<void> DraftWorker::handle(Propose& m) {
  try {
    auto job = [this, &m] { return draft_phase(models_, m.batch); };
    RoundDrafts drafts = co_await lane_.run("draft", job);
    m.reply.set(std::move(drafts));
  } catch (...) {
    m.reply.fail(std::current_exception());
  }
}

awaitable<void> DraftWorker::handle(Prefill& m) {
  try {
    auto job = [this, &m] { prefill_draft(*models_.draft, *models_.draft_cache, m.prompts); };
    co_await lane_.run("draft prefill", job);
    m.reply.set({});
  } catch (...) {
    m.reply.fail(std::current_exception());
  }
}

awaitable<RoundDrafts> DraftWorker::propose(const std::vector<SpecSequence*>& batch) {
  if (batch.empty()) co_return RoundDrafts{};
  co_return co_await ask<RoundDrafts>(mailbox_, [&batch](auto reply) { return Propose{batch, reply}; });
}

awaitable<void> DraftWorker::prefill(const std::vector<DraftPrefill>& prompts) {
  if (prompts.empty() || !models_.draft) co_return;
  co_await ask<std::monostate>(mailbox_, [&prompts](auto reply) { return Prefill{prompts, reply}; });
}

awaitable<void> DraftWorker::stop() {
  co_await ask<std::monostate>(mailbox_, [](auto reply) { return Stop{reply}; });
}

}  // namespace specd::actors
