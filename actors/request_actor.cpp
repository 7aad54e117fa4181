#include "actors/request_actor.hpp"

#include <boost/asio/co_spawn.hpp>

#include <cstdio>

#include "actors/scheduler_actor.hpp"
#include "actors/spawn.hpp"
#include "trace/burst_trace.hpp"
#include "trace/trace_recorder.hpp"

namespace specd::actors {

namespace {

double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

RequestActor::RequestActor(asio::any_io_executor strand, SchedulerActor& scheduler, Setup setup)
    : strand_(strand),
      scheduler_(scheduler),
      mailbox_(strand, static_cast<size_t>(std::max(setup.queue_capacity, 1))),
      id_(std::move(setup.id)),
      number_(setup.number),
      submitted_at_(Clock::now()),
      on_burst_(std::move(setup.on_burst)),
      on_done_(std::move(setup.on_done)),
      live_count_(std::move(setup.live_count)),
      trace_(setup.trace && setup.trace->enabled() ? std::move(setup.trace) : nullptr) {
  if (live_count_) *live_count_ += 1;
}

RequestActor::~RequestActor() {
  if (live_count_) *live_count_ -= 1;
}

void RequestActor::start() {
  spawn_logged(
      strand_, [self = shared_from_this()]() { return self->run(); }, "request actor");
}

bool RequestActor::post_burst(Burst burst) { return mailbox_.try_send(error_code{}, Message(std::move(burst))); }

void RequestActor::post_finished(Finished finished) {
  spawn_logged(
      strand_,
      [self = shared_from_this(), finished = std::move(finished)]() mutable -> awaitable<void> {
        Message message(std::move(finished));
        co_await self->mailbox_.async_send(error_code{}, std::move(message), asio::use_awaitable);
      },
      "request finish");
}

void RequestActor::cancel() {
  if (finished_.load() || cancel_requested_.exchange(true)) return;
  scheduler_.cancel(id_, number_);
}

awaitable<void> RequestActor::run() {
  for (;;) {
    auto next = co_await receive<Message>(mailbox_);
    if (!next) co_return;
    Message& message = *next;
    if (auto* finished = std::get_if<Finished>(&message)) {
      finish(*finished);
      co_return;
    }
    if (auto* burst = std::get_if<Burst>(&message)) deliver(*burst);
  }
}

void RequestActor::deliver(Burst& burst) {
  if (cancel_requested_.load()) return;
  const auto received = Clock::now();
  if (!first_token_at_) first_token_at_ = received;
  tokens_.insert(tokens_.end(), burst.token_ids.begin(), burst.token_ids.end());
  logprobs_.insert(logprobs_.end(), burst.logprobs.begin(), burst.logprobs.end());
  text_ += burst.text;
  std::shared_ptr<BurstTrace> mark;
  if (trace_)
    mark = std::make_shared<BurstTrace>(trace_, number_, id_, static_cast<double>(burst.token_ids.size()), received);
  if (on_burst_) {
    burst.id = id_;
    if (mark) burst.on_written = [mark] { mark->written(); };
    on_burst_(burst);
  }
  // Recorded now, or once a sink that kept the callback has written the burst and dropped it.
  if (mark) mark->handed();
}

void RequestActor::finish(Finished& m) {
  // A cancel that reached this actor before the scheduler saw it still ends the request.
  const FinishReason reason = compose_finish_reason({m.error.has_value(), cancel_requested_.load()}, m.reason);
  const bool cancelled = reason == FinishReason::cancelled;
  if (!m.tail.empty() && !cancelled && on_burst_) on_burst_(Burst{id_, {}, m.tail, 0, 0});
  text_ += m.tail;

  GenerateResult result;
  result.id = id_;
  result.finish_reason = reason;
  result.error = m.error;
  result.token_ids = std::move(tokens_);
  result.logprobs = std::move(logprobs_);
  result.text = std::move(text_);
  result.usage = {m.prompt_tokens, static_cast<int32_t>(result.token_ids.size()), m.cached_tokens};
  result.spec = m.stats;
  const auto now = Clock::now();
  if (m.admitted_at != Clock::time_point{}) result.timings.queued_ms = millis(m.admitted_at - submitted_at_);
  if (first_token_at_) {
    result.timings.first_token_ms = millis(*first_token_at_ - submitted_at_);
    const double decode_s = millis(now - *first_token_at_) / 1000.0;
    if (decode_s > 0) result.timings.tokens_per_second = static_cast<double>(result.token_ids.size()) / decode_s;
  }
  result.timings.total_ms = millis(now - submitted_at_);
  if (trace_) {
    trace_->request_instant(number_, id_, "done", now,
                            {{"finish_reason", std::string(finish_reason_name(result.finish_reason))},
                             {"completion_tokens", static_cast<double>(result.token_ids.size())},
                             {"ttft_ms", result.timings.first_token_ms}});
  }
  finished_ = true;
  on_burst_ = {};
  if (on_done_) {
    auto done = std::move(on_done_);
    done(std::move(result));
  }
}

}  // namespace specd::actors
