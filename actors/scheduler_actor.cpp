#include "actors/scheduler_actor.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <climits>

#include "actors/request_actor.hpp"
#include "actors/spawn.hpp"
#include "engine/planning/kv_budget.hpp"
#include "engine/planning/prefill_budget.hpp"
#include "engine/request/request_output.hpp"

namespace specd::actors {

using namespace boost::asio::experimental::awaitable_operators;

struct SchedulerActor::Entry {
  std::shared_ptr<RequestActor> actor;
  GenerateRequest request;
  std::vector<int32_t> prompt;
  RequestOutput output;               // decides when the request is finished
  std::unique_ptr<SpecSequence> seq;  // from admission
  std::optional<SlotGrant> slots;     // from admission to finish
  Clock::time_point admitted_at;
  std::optional<RequestError> error;  // the sink lagged (slow_consumer)
  int64_t prefilled = 0;              // prompt tokens in the target slot (chunked prefill)
  bool resuming = false;              // preempted after sending tokens: prefill them again, sample nothing
  int64_t cached_tokens = 0;          // prompt tokens the prefix cache held at its prefill
  int64_t chunks = 0;                 // prefill chunks run (the trace's prefill span)
  bool finished() const { return output.finished() || error; }
};

struct SchedulerActor::RoundOutcome {
  std::vector<Entry*> chunked;     // fresh entries that prefilled a chunk, in order
  std::vector<int64_t> chunk_end;  // how far each one's prompt is in its slot now
  std::vector<int64_t> cached;     // prompt tokens each first chunk found cached (0 for later chunks)
  int64_t prompt_tokens = 0;       // prompt tokens the round's pass carried
  TargetPrefills prefills;         // one first token per chunk that completed its prompt
  LaneSpan draft_prefill;
  RoundResult round;  // one row per running entry
};

SchedulerActor::SchedulerActor(asio::any_io_executor strand, SchedulerOptions options, CacheManager& cache,
                               RoundLanes& lanes, TraceRecorder* trace,
                               std::shared_ptr<std::atomic<int64_t>> live_requests)
    : strand_(strand),
      options_(options),
      cache_(cache),
      lanes_(lanes),
      trace_(trace),
      live_requests_(std::move(live_requests)),
      mailbox_(strand, static_cast<size_t>(options.max_waiting) + 1024),
      planner_(std::move(options_.planning), RoundLimits{options_.max_seq_len, options_.has_draft}) {}

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
    if (idle()) co_await return_released_blocks();  // no round will come to return them
    co_await collect_messages();
    if (stopping_) {
      co_await end_for_stop();
      if (idle()) break;  // checked here: a stopping scheduler waits for no message
    }
    co_await admit();
    if (!running_.empty() || !fresh_.empty()) co_await run_round();
  }
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
  for (auto& m : messages) co_await handle(m);
}

awaitable<void> SchedulerActor::handle(Message& message) {
  if (auto* m = std::get_if<Submit>(&message)) {
    co_await accept(*m);
  } else if (auto* m = std::get_if<Cancel>(&message)) {
    auto match = [m](const Entry& e) { return m->number ? e.actor->number() == m->number : e.actor->id() == m->id; };
    co_await finish_where(waiting_, match, FinishReason::cancelled);
    co_await finish_where(fresh_, match, FinishReason::cancelled);
    co_await finish_where(running_, match, FinishReason::cancelled);
  } else if (auto* m = std::get_if<Snapshot>(&message)) {
    EngineSnapshot s = counters_;
    s.waiting = static_cast<int32_t>(waiting_.size());
    s.running = static_cast<int32_t>(running_.size() + fresh_.size());
    const CacheUsage usage = co_await cache_.usage();
    s.target_slots_in_use = usage.target_in_use;
    s.draft_slots_in_use = usage.draft_in_use;
    s.slots_total = usage.slots;
    s.live_requests = live_requests_ ? live_requests_->load() : 0;
    s.kv_blocks_total = options_.kv.blocks;
    for (const auto* list : {&running_, &fresh_}) {
      for (const auto& e : *list) s.kv_blocks_used += blocks_for(e->seq->tokens.size(), options_.kv.block_size);
    }
    s.cost_ratio = planner_.measured_cost_ratio();
    m->reply.set(std::move(s));
  } else if (auto* m = std::get_if<Stop>(&message)) {
    stopping_ = true;
    stop_deadline_ = m->deadline;
    stop_replies_.push_back(m->reply);  // run() ends the requests: end_for_stop
  }
}

// Queues a submission, or refuses it: stopping, a duplicate id, or a full queue.
awaitable<void> SchedulerActor::accept(Submit& m) {
  const GenerateRequest& r = m.request;
  std::vector<int32_t> eos_ids = r.ignore_eos ? std::vector<int32_t>{} : options_.eos_ids;
  RequestOutput output(options_.tokenizer, {std::move(eos_ids), r.stop, r.max_tokens,
                                            static_cast<int64_t>(m.prompt.size()), options_.max_seq_len});
  auto entry = std::make_unique<Entry>(Entry{std::move(m.actor),
                                             std::move(m.request),
                                             std::move(m.prompt),
                                             std::move(output),
                                             nullptr,
                                             std::nullopt,
                                             {},
                                             std::nullopt});
  const auto& id = entry->actor->id();
  auto same_id = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e->actor->id() == id; });
  };
  auto queue_full = [&] { return static_cast<int32_t>(waiting_.size()) >= options_.max_waiting; };
  // Requests that arrive together must not be refused while KV slots are free: the
  // bound is on requests that wait for one.
  if (queue_full() && !stopping_) co_await admit();
  std::optional<RequestError> refusal;
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
    entry->actor->post_finished({FinishReason::error, refusal, {}, static_cast<int32_t>(entry->prompt.size())});
    co_return;
  }
  waiting_.push_back(std::move(entry));
}

awaitable<void> SchedulerActor::end_for_stop() {
  // Nothing waiting is admitted any more: that includes a request preempted since the Stop.
  co_await finish_where(
      waiting_, [](const Entry&) { return true; }, FinishReason::cancelled);
  if (Clock::now() < stop_deadline_) co_return;
  co_await finish_where(
      fresh_, [](const Entry&) { return true; }, FinishReason::cancelled);
  co_await finish_where(
      running_, [](const Entry&) { return true; }, FinishReason::cancelled);
}

// Grants slots in arrival order while CacheManager has them.
awaitable<void> SchedulerActor::admit() {
  while (!waiting_.empty() && !stopping_) {
    Entry& e = *waiting_.front();
    if (options_.kv.blocks > 0 && blocks_in_use() + blocks_reserved(e) > options_.kv.blocks) break;
    const bool needs_draft =
        options_.has_draft && e.request.spec.enabled && e.request.spec.drafter == DrafterKind::model;
    auto grant = co_await cache_.acquire(needs_draft);
    if (!grant) break;
    e.slots = grant;
    if (e.seq) {  // preempted earlier: it goes on where it was, in its new slots
      e.seq->target_slot = grant->target_slot;
      e.seq->draft_slot = grant->draft_slot;
    } else {
      e.admitted_at = Clock::now();
      e.seq = std::make_unique<SpecSequence>(e.prompt, grant->target_slot, grant->draft_slot, e.request.sampling,
                                             e.request.spec, planner_.start(e.request.spec, grant->draft_slot >= 0));
      trace_.queued(e.actor->number(), e.actor->id(), e.actor->submitted_at(), e.admitted_at);
    }
    fresh_.push_back(std::move(waiting_.front()));
    waiting_.erase(waiting_.begin());
  }
}

int64_t SchedulerActor::prefill_length(const Entry& e) const {
  return e.resuming ? static_cast<int64_t>(e.seq->tokens.size()) - 1 : static_cast<int64_t>(e.prompt.size());
}

int64_t SchedulerActor::blocks_reserved(const Entry& e) const {
  const size_t tokens = e.seq ? e.seq->tokens.size() : e.prompt.size();
  return blocks_for(static_cast<int64_t>(tokens) + options_.planning.k_max + 1, options_.kv.block_size);
}

int64_t SchedulerActor::blocks_in_use() const {
  int64_t blocks = 0;
  for (const auto* list : {&running_, &fresh_}) {
    for (const auto& e : *list) blocks += blocks_reserved(*e);
  }
  return blocks;
}

awaitable<void> SchedulerActor::preempt_to_fit() {
  if (options_.kv.blocks <= 0) co_return;
  const int32_t block = options_.kv.block_size;
  for (;;) {
    int64_t need = 0;
    for (const auto& e : running_) {
      need += blocks_for(static_cast<int64_t>(e->seq->tokens.size()) + options_.planning.k_max, block);
    }
    for (const auto& e : fresh_) need += blocks_for(prefill_length(*e), block);
    // One request alone always fits: the engine refuses a pool smaller than max_seq_len.
    if (need <= options_.kv.blocks || running_.size() + fresh_.size() <= 1) co_return;
    std::vector<std::unique_ptr<Entry>>* from = nullptr;
    size_t at = 0;
    for (auto* list : {&running_, &fresh_}) {  // the youngest: admitted last
      for (size_t i = 0; i < list->size(); ++i) {
        if (!from || (*list)[i]->admitted_at >= (*from)[at]->admitted_at) {  // ties: the later in its list
          from = list;
          at = i;
        }
      }
    }
    std::unique_ptr<Entry> youngest = std::move((*from)[at]);
    from->erase(from->begin() + static_cast<std::ptrdiff_t>(at));
    co_await preempt(*youngest);
    waiting_.insert(waiting_.begin(), std::move(youngest));
  }
}

awaitable<void> SchedulerActor::return_released_blocks() {
  if (released_.empty()) co_return;
  co_await lanes_.release(released_);
  released_.clear();
}

// Drops the entry's KV (its committed blocks stay in the prefix cache); it keeps its
// sequence, output, planner state and random stream, so it resumes unchanged.
awaitable<void> SchedulerActor::preempt(Entry& e) {
  released_.push_back(*e.slots);
  co_await cache_.release(*e.slots);
  e.slots.reset();
  e.prefilled = 0;
  e.resuming = e.seq->tokens.size() > e.prompt.size();
  counters_.preemptions += 1;
}

awaitable<void> SchedulerActor::run_round() {
  co_await preempt_to_fit();
  if (running_.empty() && fresh_.empty()) co_return;
  if (running_.empty()) batch_drafting_ = true;  // a new batch: nothing planned against drafting yet
  std::optional<BatchPlan> batch_plan;
  RoundPlan plan = plan_round(batch_plan);
  RoundOutcome outcome;
  std::optional<RequestError> failure;
  const auto round_start = Clock::now();
  try {
    outcome = co_await execute(plan);
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
  const double seconds = fresh_.empty() ? std::chrono::duration<double>(Clock::now() - round_start).count() : 0;
  const int64_t delivered_before = delivered_tokens_;
  const RoundResult& round = outcome.round;
  round_timing_ = {round_start, Clock::now(), outcome.prefills.lane, outcome.draft_prefill, {}};
  if (round.verify_start != Clock::time_point{}) {
    round_timing_.verify = {round.verify_start,
                            round.verify_start + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(round.verify_phase_seconds))};
  }
  planned_k_.clear();
  for (const RowPlan& row : plan.rows) planned_k_.push_back(row.k);
  co_await apply_round(outcome, seconds);
  if (trace_.on()) trace_round(outcome, delivered_tokens_ - delivered_before, batch_plan);
}

RoundPlan SchedulerActor::plan_round(std::optional<BatchPlan>& batch_plan) {
  std::vector<KRow> rows;
  for (auto& e : running_) rows.push_back(k_row(*e->seq, e->request.max_tokens - e->output.generated()));
  KPlan planned = planner_.plan(rows);
  batch_plan = std::move(planned.batch);
  RoundPlan plan;
  for (size_t i = 0; i < running_.size(); ++i)
    plan.rows.push_back(plan_row(*running_[i]->seq, planned.k[i], planned.trees[i]));
  return plan;
}

awaitable<void> SchedulerActor::apply_round(RoundOutcome& outcome, double seconds) {
  std::vector<KOutcome> running;
  for (size_t i = 0; i < running_.size(); ++i) {
    apply_output(*running_[i]->seq, outcome.round.rows[i]);
    running.push_back(k_outcome(*running_[i]->seq, outcome.round.rows[i]));
  }
  const bool drafted = std::any_of(outcome.round.rows.begin(), outcome.round.rows.end(),
                                   [](const RoundOutput& r) { return r.drafted > 0; });
  if (seconds > 0 && !running.empty()) {
    recent_rounds_.push_back(seconds);
    if (recent_rounds_.size() > kRecentRounds) recent_rounds_.pop_front();
  }
  if (!running.empty()) {
    planner_.observe(running, outcome.round, seconds);
    counters_.rounds += 1;
    batch_drafting_ = !planner_.plans_batch() || drafted;
  }
  const int64_t delivered_before = delivered_tokens_;
  for (size_t i = 0; i < running_.size(); ++i) {
    const RoundOutput& row = outcome.round.rows[i];
    const int32_t tree_nodes = row.drafted > row.depth ? row.drafted : 0;
    if (tree_nodes > 0) {
      counters_.tree_rounds += 1;
      counters_.tree_nodes_verified += tree_nodes;
      counters_.tree_nodes_accepted += row.accepted;
    }
    deliver(*running_[i], row.tokens, row.drafted, row.accepted, planned_k_[i], tree_nodes);
  }
  if (seconds > 0 && !running.empty())
    tally_round(running.size(), drafted, seconds, delivered_tokens_ - delivered_before);
  co_await finish_where(
      running_, [](const Entry& e) { return e.finished(); }, FinishReason::length);
  co_await start_prefilled(outcome);
}

// Newcomers whose prompt is now all in their slot take their first token and join the
// batch; the others keep prefilling in the next rounds.
awaitable<void> SchedulerActor::start_prefilled(RoundOutcome& outcome) {
  std::vector<std::unique_ptr<Entry>> started;
  size_t next_first = 0;
  for (size_t i = 0; i < outcome.chunked.size(); ++i) {
    Entry& e = *outcome.chunked[i];
    e.prefilled = outcome.chunk_end[i];
    e.chunks += 1;
    if (outcome.cached[i] > 0 && !e.resuming) e.cached_tokens = outcome.cached[i];
    if (e.prefilled < prefill_length(e)) continue;
    auto it = std::find_if(fresh_.begin(), fresh_.end(), [&](const auto& f) { return f.get() == &e; });
    if (e.resuming) {  // back where it was: its next token is already the context's last
      e.resuming = false;
      running_.push_back(std::move(*it));
      fresh_.erase(it);
      continue;
    }
    counters_.prefix_queried_tokens += static_cast<int64_t>(e.prompt.size());
    counters_.prefix_hit_tokens += e.cached_tokens;
    const FirstToken& first = outcome.prefills.first_tokens[next_first++];
    e.seq->tokens.push_back(first.token);
    e.seq->rng = first.rng;
    started.push_back(std::move(*it));
    fresh_.erase(it);
    if (!deliver(e, std::span(&first.token, 1), 0, 0)) running_.push_back(std::move(started.back()));
  }
  co_await finish_where(
      started, [](const Entry& e) { return e.finished(); }, FinishReason::length);
}

// The median, not the mean: a round the host stalled must not widen the next chunks.
double SchedulerActor::recent_round_seconds() const {
  if (recent_rounds_.empty()) return 0;
  std::vector<double> sorted(recent_rounds_.begin(), recent_rounds_.end());
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  return sorted[sorted.size() / 2];
}

int64_t SchedulerActor::prefill_budget(const RoundPlan& plan) const {
  PrefillBudgetInputs in;
  in.cap = options_.prefill_chunk;
  in.slowdown = options_.prefill_slowdown;
  for (const RowPlan& row : plan.rows) in.verify_rows += row.k + 1;
  in.round_seconds = recent_round_seconds();
  for (const auto& e : fresh_) in.waiting_tokens += prefill_length(*e) - e->prefilled;
  return specd::prefill_budget(in, planner_.round_costs());
}

// The round on the lanes: the draft lane proposes for the running batch while the
// target lane maps newcomers' cached prefixes; then the target lane runs the one pass
// (verify rows and prompt chunks) while the draft lane prefills the chunks into the
// draft cache. Without overlap the lanes take turns.
awaitable<SchedulerActor::RoundOutcome> SchedulerActor::execute(RoundPlan& plan) {
  RoundOutcome out;
  co_await return_released_blocks();  // before any job that may take blocks
  std::vector<TargetPrefill> prefills;
  // First come, first prefilled, within the round's budget.
  int64_t budget = prefill_budget(plan);
  for (auto& e : fresh_) {
    const int64_t take = std::min(budget, prefill_length(*e) - e->prefilled);
    if (take <= 0) break;
    budget -= take;
    std::vector<int32_t> source = e->prompt;
    if (e->resuming) source.assign(e->seq->tokens.begin(), e->seq->tokens.end() - 1);
    prefills.push_back({e->seq->target_slot, std::move(source), e->seq->sampling, e->seq->rng, e->prefilled,
                        e->prefilled + take, !e->resuming, e->request.cache_prompt});
    out.chunked.push_back(e.get());
  }
  // The draft prefill follows where the target's went (a prefix hit moves a chunk on).
  // While the planner keeps the batch at K = 0 a draft prefill is wasted work on a busy
  // machine; the draft slot then catches up lazily if drafting resumes, and the planner
  // prices that catch-up (SpecSequence::draft_lag).
  std::vector<DraftPrefill> prompts;
  auto draft_prompts = [&] {
    for (size_t i = 0; i < prefills.size(); ++i) {
      SpecSequence& seq = *out.chunked[i]->seq;
      if (seq.draft_slot < 0) continue;
      if (batch_drafting_) {
        prompts.push_back({seq.draft_slot, prefills[i].prompt, prefills[i].chunk_end()});
      } else {
        seq.draft_lag += static_cast<int32_t>(prefills[i].chunk_end() - prefills[i].start);
      }
    }
  };
  const bool drafting = std::any_of(plan.rows.begin(), plan.rows.end(), [](const RowPlan& r) { return r.k > 0; });
  const bool take_turns = drafting && !options_.overlap;
  RoundDrafts drafts;
  if (!drafting) {  // nobody drafts: no trip to the draft lane before the pass
    co_await lanes_.map_prefixes(prefills);
    drafts = undrafted(plan);
  } else if (take_turns) {
    co_await lanes_.map_prefixes(prefills);
    draft_prompts();
    out.draft_prefill = co_await lanes_.prefill_draft(prompts);
    drafts = co_await lanes_.propose(plan);
  } else {
    drafts = co_await (lanes_.propose(plan) && lanes_.map_prefixes(prefills));
  }
  TargetPassOutcome pass;
  if (take_turns) {
    pass = co_await lanes_.target_pass(drafts, prefills);
  } else {
    draft_prompts();
    std::tie(pass, out.draft_prefill) =
        co_await (lanes_.target_pass(drafts, prefills) && lanes_.prefill_draft(prompts));
  }
  out.round = std::move(pass.round);
  out.prefills = std::move(pass.prefills);
  for (const TargetPrefill& p : prefills) {
    out.chunk_end.push_back(p.chunk_end());
    out.cached.push_back(p.cached);
    out.prompt_tokens += p.chunk_end() - p.start;
  }
  co_return out;
}

// The round on the scheduler's track, once its outputs are applied.
void SchedulerActor::trace_round(const RoundOutcome& outcome, int64_t delivered, const std::optional<BatchPlan>& plan) {
  RoundSummary summary{outcome.round.rows.size(), outcome.prefills.first_tokens.size()};
  summary.prompt_tokens = outcome.prompt_tokens;
  for (const RoundOutput& row : outcome.round.rows) {
    summary.drafting_rows += row.drafted > 0;
    summary.drafted += row.drafted;
    summary.accepted += row.accepted;
  }
  summary.tokens = delivered;
  trace_.round(round_timing_, summary, plan);
}

bool SchedulerActor::deliver(Entry& e, std::span<const int32_t> tokens, int32_t drafted, int32_t accepted,
                             int32_t planned_k, int32_t tree_nodes) {
  OutputChunk chunk = e.output.take(tokens, drafted, accepted);
  if (planned_k < 0)
    trace_.prefill(e.actor->number(), e.actor->id(), round_timing_,
                   {static_cast<int64_t>(e.prompt.size()), e.cached_tokens, e.chunks});
  else
    trace_.request_round(e.actor->number(), e.actor->id(), round_timing_, planned_k, tree_nodes, chunk);
  delivered_tokens_ += static_cast<int64_t>(chunk.token_ids.size());
  count_drafts(chunk.drafted, chunk.accepted);
  if (!e.actor->post_burst(std::move(chunk))) {
    e.error =
        RequestError{ErrorCode::slow_consumer, "the burst handler lagged more bursts behind than its queue holds"};
  }
  return e.finished();
}

awaitable<void> SchedulerActor::finish(Entry& e, FinishReason ended_by, const RequestError* failure) {
  std::optional<RequestError> error = failure ? std::optional<RequestError>(*failure) : e.error;
  if (e.slots) {
    released_.push_back(*e.slots);
    co_await cache_.release(*e.slots);
  }
  const FinishReason reason =
      compose_finish_reason({error.has_value(), ended_by == FinishReason::cancelled, e.output.finished()}, ended_by);
  counters_.requests_finished += 1;
  if (reason == FinishReason::cancelled) counters_.requests_cancelled += 1;
  if (reason == FinishReason::error) counters_.requests_failed += 1;
  RequestActor::Finished finished{reason,
                                  std::move(error),
                                  e.output.stats(),
                                  static_cast<int32_t>(e.prompt.size()),
                                  e.admitted_at,
                                  e.output.flush(),
                                  static_cast<int32_t>(e.cached_tokens)};
  e.actor->post_finished(std::move(finished));
}

// The speculative counters count what the requests kept, as their statistics do.
void SchedulerActor::count_drafts(int32_t drafted, int32_t accepted) {
  if (drafted == 0) return;
  counters_.drafts += 1;
  counters_.draft_tokens += drafted;
  counters_.accepted_tokens += accepted;
  auto& per_position = counters_.accepted_per_position;
  if (static_cast<int32_t>(per_position.size()) < drafted) per_position.resize(drafted, 0);
  for (int32_t i = 0; i < accepted; ++i) per_position[i] += 1;
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
