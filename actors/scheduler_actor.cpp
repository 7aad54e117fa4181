// The scheduler's loop: messages, admission, preemption and endings. The round itself
// is in scheduler_round.cpp; the policies it applies are plain functions
// (engine/planning/schedule_policy.hpp).
#include "actors/scheduler_actor.hpp"

#include <algorithm>

#include "actors/request_actor.hpp"
#include "actors/scheduler_entry.hpp"
#include "actors/spawn.hpp"

namespace specd::actors {

SchedulerActor::SchedulerActor(asio::any_io_executor strand, SchedulerOptions options, CacheManager& cache,
                               RoundLanes& lanes, TraceRecorder* trace,
                               std::shared_ptr<std::atomic<int64_t>> live_requests)
    : strand_(strand),
      options_(std::move(options)),
      cache_(cache),
      lanes_(lanes),
      trace_(trace),
      live_requests_(std::move(live_requests)),
      mailbox_(strand, static_cast<size_t>(options_.max_waiting) + 1024),
      planner_(options_.planning) {}

SchedulerActor::~SchedulerActor() = default;

bool SchedulerActor::try_submit(Submit submit) { return mailbox_.try_send(error_code{}, Message(std::move(submit))); }

void SchedulerActor::post(Message message) {
  // Cancels must not be lost: wait for room rather than drop.
  spawn_logged(
      strand_,
      [this, message = std::move(message)]() mutable -> awaitable<void> {
        co_await mailbox_.async_send(error_code{}, std::move(message), use_tuple);
      },
      "scheduler post");
}

void SchedulerActor::cancel(std::string id, uint64_t number) { post(Cancel{std::move(id), number}); }

awaitable<EngineSnapshot> SchedulerActor::snapshot() {
  return ask<EngineSnapshot>(mailbox_, [](auto reply) { return Snapshot{reply}; });
}

awaitable<void> SchedulerActor::stop(Clock::time_point deadline) {
  co_await ask<std::monostate>(mailbox_, [deadline](auto reply) { return Stop{deadline, reply}; });
}

bool SchedulerActor::idle() const { return running_.empty() && prefilling_.empty() && (waiting_.empty() || stopping_); }

awaitable<void> SchedulerActor::run() {
  for (;;) {
    co_await collect_messages();
    if (stopping_) {
      end_for_stop();
      if (idle()) break;  // checked here: a stopping scheduler waits for no message
    }
    admit();
    if (!running_.empty() || !prefilling_.empty()) co_await run_round();
  }
  // Late submissions (the engine's gate makes them rare) fail instead of hanging.
  for (bool more = true; more;) {
    more = mailbox_.try_receive([](error_code, Message message) {
      if (auto* submit = std::get_if<Submit>(&message))
        submit->actor->post_finished({FinishReason::error, engine_stopping()});
    });
  }
  mailbox_.close();
  for (auto& reply : stop_replies_) reply.set({});
}

// Blocks for one message when there is no work, then takes everything queued: the
// round boundary is where cancels and newcomers take effect. Once stopping, it never
// blocks: the requests that ran past the Stop may end by themselves before its deadline,
// and no further message is owed.
awaitable<void> SchedulerActor::collect_messages() {
  std::vector<Message> messages;
  if (idle() && !stopping_) {
    auto next = co_await receive<Message>(mailbox_);
    if (!next) co_return;
    Message& message = *next;
    messages.push_back(std::move(message));
  }
  while (mailbox_.try_receive([&](error_code, Message m) { messages.push_back(std::move(m)); })) {
  }
  for (auto& m : messages) handle(m);
}

void SchedulerActor::handle(Message& message) {
  if (auto* m = std::get_if<Submit>(&message)) {
    accept(*m);
  } else if (auto* m = std::get_if<Cancel>(&message)) {
    auto match = [m](const Entry& e) { return m->number ? e.actor->number() == m->number : e.actor->id() == m->id; };
    finish_where(waiting_, match, FinishReason::cancelled);
    finish_where(prefilling_, match, FinishReason::cancelled);
    finish_where(running_, match, FinishReason::cancelled);
  } else if (auto* m = std::get_if<Snapshot>(&message)) {
    const CacheUsage usage = cache_.usage();
    EngineSnapshot s = counters_;
    take_snapshot(s, usage);
    m->reply.set(std::move(s));
  } else if (auto* m = std::get_if<Stop>(&message)) {
    stopping_ = true;
    stop_deadline_ = m->deadline;
    stop_replies_.push_back(m->reply);  // run() ends the requests: end_for_stop
  }
}

void SchedulerActor::take_snapshot(EngineSnapshot& s, const CacheUsage& usage) const {
  s.waiting = static_cast<int32_t>(waiting_.size());
  s.running = static_cast<int32_t>(running_.size() + prefilling_.size());
  s.target_slots_in_use = usage.target_in_use;
  s.draft_slots_in_use = usage.draft_in_use;
  s.slots_total = usage.slots;
  s.live_requests = live_requests_ ? live_requests_->load() : 0;
  s.kv_blocks_total = options_.kv.blocks;
  s.kv_blocks_referenced_target = usage.target_blocks_referenced;
  s.kv_blocks_referenced_draft = usage.draft_blocks_referenced;
  s.cost_ratio = planner_.measured_cost_ratio();
}

// Queues a submission, or refuses it: stopping, a duplicate id, or a full queue.
void SchedulerActor::accept(Submit& m) {
  const GenerateRequest& r = m.request;
  RequestOutput output(options_.tokenizer, {.eos_ids = r.ignore_eos ? std::vector<int32_t>{} : options_.eos_ids,
                                            .stop = r.stop,
                                            .max_tokens = r.max_tokens,
                                            .prompt_tokens = static_cast<int64_t>(m.prompt.size()),
                                            .max_seq_len = options_.planning.sequence.max_seq_len});
  auto entry = std::make_unique<Entry>(Entry{.actor = std::move(m.actor),
                                             .request = std::move(m.request),
                                             .prompt = std::move(m.prompt),
                                             .grammar = std::move(m.grammar),
                                             .output = std::move(output)});
  const auto& id = entry->actor->id();
  auto same_id = [&](const Entries& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e->actor->id() == id; });
  };
  auto queue_full = [&] { return static_cast<int32_t>(waiting_.size()) >= options_.max_waiting; };
  // Requests that arrive together must not be refused while KV slots are free: the
  // bound is on requests that wait for one.
  if (queue_full() && !stopping_) admit();
  std::optional<RequestError> refusal;
  if (stopping_) {
    refusal = engine_stopping();
  } else if (same_id(waiting_) || same_id(prefilling_) || same_id(running_)) {
    refusal = RequestError{ErrorCode::duplicate_id, "request id '" + id + "' is already in flight"};
  } else if (queue_full()) {
    refusal = RequestError{ErrorCode::overloaded,
                           "the waiting queue is full (" + std::to_string(options_.max_waiting) + " requests)"};
  }
  if (refusal) {
    counters_.requests_failed += 1;  // not through finish_where(): no slots, no trace span
    entry->actor->post_finished({FinishReason::error, refusal, {}, static_cast<int32_t>(entry->prompt.size())});
    return;
  }
  waiting_.push_back(std::move(entry));
}

void SchedulerActor::end_for_stop() {
  // Nothing waiting is admitted any more: that includes a request preempted since the Stop.
  auto all = [](const Entry&) { return true; };
  finish_where(waiting_, all, FinishReason::cancelled);
  if (Clock::now() < stop_deadline_) return;
  finish_where(prefilling_, all, FinishReason::cancelled);
  finish_where(running_, all, FinishReason::cancelled);
}

// Running requests decode; the others (new, prefilling, or preempted and resuming) prefill.
KvFootprint SchedulerActor::footprint(const Entry& e) const {
  if (e.seq && e.seq->tokens.size() > e.prompt.size() && !e.resuming)
    return {.context = static_cast<int64_t>(e.seq->tokens.size()), .decoding = true};
  return {.to_prefill = e.seq ? e.prefill_length() : static_cast<int64_t>(e.prompt.size())};
}

int64_t SchedulerActor::blocks_reserved() const {
  int64_t blocks = 0;
  for (const auto* list : {&running_, &prefilling_}) {
    for (const auto& e : *list)
      blocks += blocks_for(reserved_positions(footprint(*e), options_.planning.sequence.k_max), options_.kv.block_size);
  }
  return blocks;
}

// Grants slots in arrival order while CacheManager has them and the pools have blocks.
void SchedulerActor::admit() {
  while (!waiting_.empty() && !stopping_ && !room_short_) {
    Entry& e = *waiting_.front();
    const int64_t wanted =
        blocks_for(reserved_positions(footprint(e), options_.planning.sequence.k_max), options_.kv.block_size);
    if (!admits(blocks_reserved(), wanted, options_.kv.blocks)) break;
    const bool needs_draft =
        options_.planning.has_draft_model && e.request.spec.enabled && e.request.spec.drafter == DrafterKind::model;
    auto grant = cache_.acquire(needs_draft);
    if (!grant) break;
    e.slots = grant;
    if (e.seq) {  // preempted earlier: it goes on where it was, in its new slots
      e.seq->target_slot = grant->target_slot;
      e.seq->draft_slot = grant->draft_slot;
    } else {
      e.admitted_at = Clock::now();
      e.seq = std::make_unique<SpecSequence>(e.prompt, grant->target_slot, grant->draft_slot, e.request.sampling,
                                             e.request.spec, planner_.start(e.request.spec, grant->draft_slot >= 0));
      if (e.grammar) e.seq->grammar.emplace(e.grammar);
      trace_.queued(e.actor->number(), e.actor->id(), e.actor->submitted_at(), e.admitted_at);
    }
    prefilling_.push_back(std::move(waiting_.front()));
    waiting_.erase(waiting_.begin());
  }
}

// Preempts the youngest requests while the next round's estimate does not fit the pools.
void SchedulerActor::preempt_to_fit() {
  for (;;) {
    const std::vector<Entry*> all = admitted_entries();
    int64_t need = 0;
    for (const Entry* e : all)
      need += blocks_for(round_positions(footprint(*e), options_.planning.sequence.k_max), options_.kv.block_size);
    const std::optional<size_t> victim = preemption_victim(admission_times(all), need, options_.kv.blocks);
    if (!victim) return;
    preempt(all[*victim]);
  }
}

bool SchedulerActor::preempt_youngest() {
  const std::vector<Entry*> all = admitted_entries();
  const std::optional<size_t> victim = youngest_of_several(admission_times(all));
  if (!victim) return false;
  preempt(all[*victim]);
  room_short_ = true;  // until a request ends, the victim would only meet the same shortage
  return true;
}

std::vector<SchedulerActor::Entry*> SchedulerActor::admitted_entries() const {
  std::vector<Entry*> all;
  for (const auto* list : {&running_, &prefilling_}) {
    for (const auto& e : *list) all.push_back(e.get());
  }
  return all;
}

std::vector<int64_t> SchedulerActor::admission_times(std::span<Entry* const> entries) {
  std::vector<int64_t> admitted;
  for (const Entry* e : entries) admitted.push_back(e->admitted_at.time_since_epoch().count());
  return admitted;
}

// The request's KV is dropped (its committed blocks stay in the prefix cache); it keeps
// its sequence, output, planner state and random stream, and waits at the head of the
// queue to be prefilled again, so it resumes unchanged.
void SchedulerActor::preempt(Entry* victim) {
  release_slots(std::span(&victim, 1));
  victim->prefilled = 0;
  victim->resuming = victim->seq->tokens.size() > victim->prompt.size();
  counters_.preemptions += 1;
  Entries& from = std::any_of(running_.begin(), running_.end(), [&](const auto& e) { return e.get() == victim; })
                      ? running_
                      : prefilling_;
  auto it = std::find_if(from.begin(), from.end(), [&](const auto& e) { return e.get() == victim; });
  waiting_.insert(waiting_.begin(), std::move(*it));
  from.erase(it);
}

void SchedulerActor::release_slots(std::span<Entry* const> entries) {
  std::vector<SlotGrant> slots;
  for (Entry* e : entries) {
    if (e->slots) slots.push_back(*e->slots);
    e->slots.reset();
  }
  for (const SlotGrant& grant : slots) cache_.release(grant);
}

void SchedulerActor::end(Entries& leaving, FinishReason reason, const RequestError* failure) {
  std::vector<Entry*> ended;
  for (auto& e : leaving) {
    ended.push_back(e.get());
    std::optional<RequestError> error = failure ? std::optional<RequestError>(*failure) : e->error;
    const FinishReason ended_by =
        compose_finish_reason({error.has_value(), reason == FinishReason::cancelled, e->output.finished()}, reason);
    counters_.requests_finished += 1;
    if (ended_by == FinishReason::cancelled) counters_.requests_cancelled += 1;
    if (ended_by == FinishReason::error) counters_.requests_failed += 1;
    e->actor->post_finished({.reason = ended_by,
                             .error = std::move(error),
                             .stats = e->output.stats(),
                             .prompt_tokens = static_cast<int32_t>(e->prompt.size()),
                             .admitted_at = e->admitted_at,
                             .tail = e->output.flush(),
                             .cached_tokens = static_cast<int32_t>(e->cached_tokens)});
  }
  // In the same step, after the results left (the lanes' round trip is not the caller's
  // latency): no message is handled before the blocks are back, so a snapshot taken
  // after a result already sees them free.
  release_slots(ended);
  room_short_ = false;  // blocks came back: the queue may try again
}

}  // namespace specd::actors
