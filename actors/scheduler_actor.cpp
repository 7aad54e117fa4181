#include "actors/scheduler_actor.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>

#include "actors/draft_worker.hpp"
#include "actors/request_actor.hpp"
#include "actors/spawn.hpp"
#include "actors/verify_worker.hpp"
#include "engine/speculation/prefill.hpp"
#include "trace/trace_recorder.hpp"

namespace specd::actors {

using namespace boost::asio::experimental::awaitable_operators;

struct SchedulerActor::Entry {
  std::shared_ptr<RequestActor> actor;
  SpecRequest request;
  std::unique_ptr<SpecSequence> seq;  // from admission
  std::optional<SlotGrant> slots;     // from admission to finish
  int32_t generated = 0;
  Clock::time_point admitted_at;
  std::optional<FinishReason> reason;  // decided by deliver(): EOS, max_tokens, full cache, slow sink
  std::optional<RequestError> error;
};

struct SchedulerActor::RoundOutcome {
  std::vector<int32_t> first_tokens;  // one per fresh entry
  RoundResult round;                  // one row per running entry
};

SchedulerActor::SchedulerActor(asio::any_io_executor strand, SchedulerOptions options, CacheManager& cache,
                               DraftWorker& draft, VerifyWorker& verify, TraceRecorder* trace,
                               std::shared_ptr<std::atomic<int64_t>> live_requests)
    : strand_(strand),
      options_(options),
      cache_(cache),
      draft_(draft),
      verify_(verify),
      trace_(trace),
      live_requests_(std::move(live_requests)),
      mailbox_(strand, static_cast<size_t>(options.max_waiting) + 1024) {
  cost_.rounds = std::move(options_.round_costs);
}

SchedulerActor::~SchedulerActor() = default;

bool SchedulerActor::try_submit(Submit submit) { return mailbox_.try_send(error_code{}, Message(std::move(submit))); }

void SchedulerActor::post(Message message) {
  // Cancels and retirements must not be lost: wait for room rather than drop.
  spawn_logged(
      strand_,
      [this, message = std::move(message)]() mutable -> awaitable<void> {
        co_await mailbox_.async_send(error_code{}, std::move(message), use_tuple);
      },
      "scheduler post");
}

void SchedulerActor::cancel(std::string id, uint64_t number) { post(Cancel{std::move(id), number}); }
void SchedulerActor::retire(uint64_t number) { post(Retire{number}); }

awaitable<EngineSnapshot> SchedulerActor::snapshot() {
  return ask<EngineSnapshot>(mailbox_, [](auto reply) { return Snapshot{reply}; });
}

awaitable<void> SchedulerActor::stop(Clock::time_point deadline) {
  co_await ask<std::monostate>(mailbox_, [deadline](auto reply) { return Stop{deadline, reply}; });
}

template <class Which>
awaitable<void> SchedulerActor::finish_where(std::vector<std::unique_ptr<Entry>>& entries, const Which& which,
                                             FinishReason reason, const RequestError* error) {
  std::vector<std::unique_ptr<Entry>> keep;
  std::vector<std::unique_ptr<Entry>> leaving;
  for (auto& e : entries) {
    if (e) (which(*e) ? leaving : keep).push_back(std::move(e));  // null: moved to the batch
  }
  entries = std::move(keep);
  for (auto& e : leaving) co_await finish(*e, reason, error);
}

bool SchedulerActor::idle() const { return running_.empty() && fresh_.empty() && (waiting_.empty() || stopping_); }

awaitable<void> SchedulerActor::run() {
  for (;;) {
    co_await collect_messages();
    co_await enforce_stop_deadline();
    if (stopping_ && idle() && waiting_.empty()) break;
    co_await admit();
    if (!running_.empty() || !fresh_.empty()) co_await run_round();
  }
  co_await draft_.stop();
  co_await verify_.stop();
  co_await cache_.stop();
  // Late submissions (the engine's gate makes them rare) fail instead of hanging.
  for (bool more = true; more;) {
    more = mailbox_.try_receive([this](error_code, Message message) {
      if (auto* submit = std::get_if<Submit>(&message)) {
        submit->actor->post_finished(
            {FinishReason::error, RequestError{ErrorCode::shutting_down, "the engine is stopping"}});
      }
    });
  }
  mailbox_.close();
  for (auto& reply : stop_replies_) reply.set({});
}

// Blocks for one message when there is no work, then takes everything queued: the
// round boundary is where cancels, retirements and newcomers take effect.
awaitable<void> SchedulerActor::collect_messages() {
  std::vector<Message> messages;
  if (idle()) {
    auto next = co_await receive<Message>(mailbox_);
    if (!next) co_return;
    Message& message = *next;
    messages.push_back(std::move(message));
  }
  while (mailbox_.try_receive([&](error_code, Message m) { messages.push_back(std::move(m)); })) {
  }
  for (auto& m : messages) co_await handle(m);
}

awaitable<void> SchedulerActor::handle(Message& message) {
  if (auto* m = std::get_if<Submit>(&message)) {
    auto entry =
        std::make_unique<Entry>(Entry{std::move(m->actor), std::move(m->request), nullptr, std::nullopt, 0, {}});
    std::optional<RequestError> refusal;
    const auto& id = entry->actor->id();
    auto same_id = [&](const auto& list) {
      return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e->actor->id() == id; });
    };
    auto queue_full = [&] { return static_cast<int32_t>(waiting_.size()) >= options_.max_waiting; };
    // Requests that arrive together must not be refused while KV slots are free: the
    // bound is on requests that wait for one.
    if (queue_full() && !stopping_) co_await admit();
    if (stopping_) {
      refusal = RequestError{ErrorCode::shutting_down, "the engine is stopping"};
    } else if (same_id(waiting_) || same_id(fresh_) || same_id(running_)) {
      refusal = RequestError{ErrorCode::duplicate_id, "request id '" + id + "' is already in flight"};
    } else if (queue_full()) {
      refusal = RequestError{ErrorCode::overloaded,
                             "the waiting queue is full (" + std::to_string(options_.max_waiting) + " requests)"};
    }
    if (refusal) {
      counters_.requests_failed += 1;  // not through finish(): no slots, no trace span
      entry->actor->post_finished(
          {FinishReason::error, refusal, {}, static_cast<int32_t>(entry->request.prompt.size())});
      co_return;
    }
    if (trace_) trace_->async_begin("queued", entry->actor->number(), entry->actor->submitted_at());
    waiting_.push_back(std::move(entry));
  } else if (auto* m = std::get_if<Cancel>(&message)) {
    auto match = [m](const Entry& e) { return m->number ? e.actor->number() == m->number : e.actor->id() == m->id; };
    co_await finish_where(waiting_, match, FinishReason::cancelled);
    co_await finish_where(running_, match, FinishReason::cancelled);
  } else if (auto* m = std::get_if<Retire>(&message)) {
    co_await finish_where(
        running_, [m](const Entry& e) { return e.actor->number() == m->number; }, FinishReason::stop);
  } else if (auto* m = std::get_if<Snapshot>(&message)) {
    EngineSnapshot s = counters_;
    s.waiting = static_cast<int32_t>(waiting_.size());
    s.running = static_cast<int32_t>(running_.size() + fresh_.size());
    const CacheUsage usage = co_await cache_.usage();
    s.target_slots_in_use = usage.target_in_use;
    s.draft_slots_in_use = usage.draft_in_use;
    s.slots_total = usage.slots;
    s.live_requests = live_requests_ ? live_requests_->load() : 0;
    s.cost_ratio = cost_.cost_ratio(0);
    m->reply.set(std::move(s));
  } else if (auto* m = std::get_if<Stop>(&message)) {
    stopping_ = true;
    stop_deadline_ = m->deadline;
    stop_replies_.push_back(m->reply);
    co_await finish_where(
        waiting_, [](const Entry&) { return true; }, FinishReason::cancelled);
  }
}

awaitable<void> SchedulerActor::enforce_stop_deadline() {
  if (!stopping_ || Clock::now() < stop_deadline_) co_return;
  co_await finish_where(
      running_, [](const Entry&) { return true; }, FinishReason::cancelled);
}

// Grants slots in arrival order while CacheManager has them.
awaitable<void> SchedulerActor::admit() {
  while (!waiting_.empty() && !stopping_) {
    Entry& e = *waiting_.front();
    const bool needs_draft =
        options_.has_draft && e.request.spec.enabled && e.request.spec.drafter == DrafterKind::model;
    auto grant = co_await cache_.acquire(needs_draft);
    if (!grant) break;
    e.slots = grant;
    e.admitted_at = Clock::now();
    e.seq = std::make_unique<SpecSequence>(e.request.prompt, grant->target_slot, grant->draft_slot, e.request.sampling,
                                           e.request.spec, cost_.cost_ratio(),
                                           cost_.acceptance.estimate(e.request.spec.drafter));
    if (trace_) {
      trace_->async_end("queued", e.actor->number(), e.admitted_at);
      trace_->async_begin("generating", e.actor->number(), e.admitted_at);
    }
    fresh_.push_back(std::move(waiting_.front()));
    waiting_.erase(waiting_.begin());
  }
}

awaitable<void> SchedulerActor::run_round() {
  std::vector<SpecSequence*> running, fresh;
  for (auto& e : running_) {
    e->seq->max_new_this_round = e->request.max_tokens - e->generated;
    e->seq->adaptive.set_cost_ratio(cost_.cost_ratio());
    running.push_back(e->seq.get());
  }
  for (auto& e : fresh_) fresh.push_back(e->seq.get());
  if (running.empty()) batch_drafting_ = true;  // a new batch: nothing planned against drafting yet
  std::optional<BatchPlan> plan;
  if (cost_.rounds) plan = plan_batch(running, *cost_.rounds, options_.max_seq_len, options_.has_draft);
  RoundOutcome outcome;
  std::optional<RequestError> failure;
  const auto round_start = Clock::now();
  try {
    outcome = co_await execute(running, fresh);
  } catch (const std::exception& error) {
    failure = RequestError{ErrorCode::internal, std::string("model call failed: ") + error.what()};
  }
  if (failure) {
    // A failed model call fails this round's requests; the engine keeps serving.
    co_await finish_where(
        running_, [](const Entry&) { return true; }, FinishReason::error, &*failure);
    co_await finish_where(
        fresh_, [](const Entry&) { return true; }, FinishReason::error, &*failure);
    co_return;
  }
  // A round that also prefilled newcomers says nothing about the per-round overhead.
  const double seconds = fresh.empty() ? std::chrono::duration<double>(Clock::now() - round_start).count() : 0;
  const bool drafted = std::any_of(outcome.round.rows.begin(), outcome.round.rows.end(),
                                   [](const RoundOutput& r) { return r.drafted > 0; });
  if (!running.empty()) {
    cost_.observe(outcome.round, seconds, running);
    record_round_counters(outcome.round);
    batch_drafting_ = !cost_.rounds || drafted;
  }
  const int64_t generated_before = delivered_tokens_;
  std::vector<bool> done(running_.size());
  for (size_t i = 0; i < running_.size(); ++i) {
    const RoundOutput& row = outcome.round.rows[i];
    done[i] = deliver(*running_[i], row.tokens, row.drafted, row.accepted);
  }
  if (seconds > 0 && !running.empty())
    tally_round(outcome.round.rows.size(), drafted, seconds, delivered_tokens_ - generated_before);
  size_t index = 0;
  co_await finish_where(
      running_, [&](const Entry&) { return done[index++]; }, FinishReason::length);
  std::vector<std::unique_ptr<Entry>> newcomers = std::move(fresh_);
  fresh_.clear();
  for (size_t i = 0; i < newcomers.size(); ++i) {  // the first token of each newcomer
    if (!deliver(*newcomers[i], {outcome.first_tokens[i]}, 0, 0)) running_.push_back(std::move(newcomers[i]));
  }
  if (trace_) trace_round(round_start, outcome, delivered_tokens_ - generated_before, plan);
  co_await finish_where(
      newcomers, [](const Entry& e) { return e.reason.has_value(); }, FinishReason::length);
}

// The round on the lanes. With overlap, the draft lane proposes for the running batch
// while the target lane prefills the newcomers, then the target lane verifies while the
// draft lane prefills the newcomers' prompts into the draft cache.
awaitable<SchedulerActor::RoundOutcome> SchedulerActor::execute(const std::vector<SpecSequence*>& running,
                                                                const std::vector<SpecSequence*>& fresh) {
  std::vector<DraftPrefill> prompts;
  // While the planner keeps the batch at K = 0 a draft prefill is wasted work on a busy
  // machine; the draft cache then catches up lazily if drafting resumes.
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (fresh[i]->draft_slot < 0) continue;
    if (batch_drafting_) {
      prompts.push_back({fresh[i]->draft_slot, fresh_[i]->request.prompt});
    } else {
      fresh[i]->draft_keep = 0;  // the slot may hold a finished request's tokens: emptied before drafting
    }
  }
  RoundOutcome out;
  const bool plain = !running.empty() && std::all_of(running.begin(), running.end(),
                                                     [](const SpecSequence* s) { return drafts_nothing(*s); });
  if (plain) {  // nobody drafts: no trip to the draft worker
    out.first_tokens = co_await verify_.prefill(fresh);
    out.round = co_await (verify_.plain_step(running) && draft_.prefill(prompts));
  } else if (!options_.overlap) {
    out.first_tokens = co_await verify_.prefill(fresh);
    co_await draft_.prefill(prompts);
    RoundDrafts drafts = co_await draft_.propose(running);
    out.round = co_await verify_.verify(drafts);
  } else if (running.empty()) {
    out.first_tokens = co_await (verify_.prefill(fresh) && draft_.prefill(prompts));
  } else {
    std::tuple<RoundDrafts, std::vector<int32_t>> phase1 = co_await (draft_.propose(running) && verify_.prefill(fresh));
    out.first_tokens = std::move(std::get<1>(phase1));
    out.round = co_await (verify_.verify(std::get<0>(phase1)) && draft_.prefill(prompts));
  }
  co_return out;
}

// One "round" event on the scheduler's track: what the round fed and emitted, and what
// the batch K planner expected of it, so a trace shows why K was what it was.
void SchedulerActor::trace_round(Clock::time_point start, const RoundOutcome& outcome, int64_t delivered,
                                 const std::optional<BatchPlan>& plan) {
  double drafting_rows = 0, drafted = 0, accepted = 0;
  for (const RoundOutput& row : outcome.round.rows) {
    drafting_rows += row.drafted > 0;
    drafted += row.drafted;
    accepted += row.accepted;
  }
  TraceArgs args{{"rows", static_cast<double>(outcome.round.rows.size())},
                 {"newcomers", static_cast<double>(outcome.first_tokens.size())},
                 {"drafting_rows", drafting_rows},
                 {"drafted", drafted},
                 {"accepted", accepted},
                 {"tokens", static_cast<double>(delivered)}};
  if (plan && !outcome.round.rows.empty()) {
    // Planned figures cover the running rows only (newcomers are prefilled, not planned).
    args.emplace_back("planned_tokens", plan->expected_tokens);
    args.emplace_back("planned_ms", plan->expected_seconds * 1e3);
    args.emplace_back("undrafted_planned_ms", plan->undrafted_seconds * 1e3);
    if (plan->refresh) args.emplace_back("refresh", 1.0);
  }
  trace_->complete("round", "scheduler", start, Clock::now(), std::move(args));
}

bool SchedulerActor::deliver(Entry& e, const std::vector<int32_t>& tokens, int32_t drafted, int32_t accepted) {
  const auto& eos = e.request.eos_ids;
  size_t keep = tokens.size();
  for (size_t i = 0; i < tokens.size() && !e.reason; ++i) {
    if (std::find(eos.begin(), eos.end(), tokens[i]) != eos.end()) {
      keep = i + 1;
      e.reason = FinishReason::stop;
    }
  }
  const auto room = static_cast<size_t>(e.request.max_tokens - e.generated);
  if (keep >= room) {
    if (keep > room || !e.reason) e.reason = FinishReason::length;
    keep = room;
  }
  e.generated += static_cast<int32_t>(keep);
  delivered_tokens_ += static_cast<int64_t>(keep);
  // The cache is full when no room is left to feed the last sampled token.
  if (!e.reason && static_cast<int64_t>(e.seq->tokens.size()) > options_.max_seq_len) e.reason = FinishReason::length;
  RequestActor::Tokens burst{{tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(keep)}, drafted, accepted};
  if (!e.actor->post_tokens(std::move(burst))) {
    e.reason = FinishReason::error;
    e.error =
        RequestError{ErrorCode::slow_consumer, "the burst handler lagged more bursts behind than its queue holds"};
  }
  return e.reason.has_value();
}

awaitable<void> SchedulerActor::finish(Entry& e, FinishReason reason, const RequestError* error_in) {
  std::optional<RequestError> error;
  if (error_in) error = *error_in;
  if (e.slots) co_await cache_.release(*e.slots);
  const auto now = Clock::now();
  if (e.reason && reason != FinishReason::cancelled) {  // what deliver() found wins, but not over a cancel
    reason = *e.reason;
    if (e.error) error = e.error;
  }
  if (trace_) trace_->async_end(e.admitted_at == Clock::time_point{} ? "queued" : "generating", e.actor->number(), now);
  counters_.requests_finished += 1;
  if (reason == FinishReason::cancelled) counters_.requests_cancelled += 1;
  if (reason == FinishReason::error) counters_.requests_failed += 1;
  RequestActor::Finished finished{reason, std::move(error), e.seq ? e.seq->stats : SpecStats{},
                                  static_cast<int32_t>(e.request.prompt.size()), e.admitted_at};
  e.actor->post_finished(std::move(finished));
}

void SchedulerActor::record_round_counters(const RoundResult& round) {
  counters_.rounds += 1;
  for (const RoundOutput& row : round.rows) {
    if (row.drafted == 0) continue;
    counters_.drafts += 1;
    counters_.draft_tokens += row.drafted;
    counters_.accepted_tokens += row.accepted;
    auto& per_position = counters_.accepted_per_position;
    if (static_cast<int32_t>(per_position.size()) < row.drafted) per_position.resize(row.drafted, 0);
    for (int32_t i = 0; i < row.accepted; ++i) per_position[i] += 1;
  }
}

void SchedulerActor::tally_round(size_t rows, bool drafted, double seconds, int64_t delivered) {
  auto& tallies = drafted ? counters_.drafting_rounds : counters_.plain_rounds;
  if (tallies.size() < rows) tallies.resize(rows);
  RoundTally& t = tallies[rows - 1];
  t.rounds += 1;
  t.seconds += seconds;
  t.tokens += delivered;
}

}  // namespace specd::actors
