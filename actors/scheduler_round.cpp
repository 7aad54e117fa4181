// The scheduler's round: plan every running row's K, choose the prompt chunks the pass
// carries, execute on the lanes (RoundLanes), apply the outputs and deliver the bursts.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <exception>

#include "actors/scheduler_actor.hpp"
#include "actors/scheduler_entry.hpp"
#include "engine/base/errors.hpp"
#include "engine/planning/prefill_budget.hpp"

namespace specd::actors {

using namespace boost::asio::experimental::awaitable_operators;

awaitable<void> SchedulerActor::run_round() {
  preempt_to_fit();
  if (running_.empty() && prefilling_.empty()) co_return;
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
  if (outcome.no_room) {  // nothing ran: the next round tries again without the youngest
    if (preempt_youngest()) co_return;
    failure = RequestError{ErrorCode::out_of_capacity, "the KV pool cannot hold this request's next round"};
  }
  if (failure) {
    // A failed model call fails this round's requests; the engine keeps serving.
    auto all = [](const Entry&) { return true; };
    finish_where(running_, all, FinishReason::error, &*failure);
    finish_where(prefilling_, all, FinishReason::error, &*failure);
    co_return;
  }
  // A round that also prefilled newcomers says nothing about the per-round overhead.
  const double seconds = prefilling_.empty() ? std::chrono::duration<double>(Clock::now() - round_start).count() : 0;
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
  apply_round(outcome, seconds);
  if (trace_.on()) trace_round(outcome, delivered_tokens_ - delivered_before, batch_plan);
}

RoundPlan SchedulerActor::plan_round(std::optional<BatchPlan>& batch_plan) {
  std::vector<RunningRequest> rows;
  for (auto& e : running_) rows.push_back(running_request(*e->seq, e->request.max_tokens - e->output.generated()));
  KPlan planned = planner_.plan(rows);
  batch_plan = std::move(planned.batch);
  RoundPlan plan;
  for (size_t i = 0; i < running_.size(); ++i)
    plan.rows.push_back(plan_row(*running_[i]->seq, planned.k[i], planned.trees[i]));
  return plan;
}

// The median, not the mean: a round the host stalled must not widen the next chunks.
double SchedulerActor::recent_round_seconds() const {
  if (recent_rounds_.empty()) return 0;
  std::vector<double> sorted(recent_rounds_.begin(), recent_rounds_.end());
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  return sorted[sorted.size() / 2];
}

// First come, first prefilled, within the round's budget (engine/planning/prefill_budget.hpp).
std::vector<TargetPrefill> SchedulerActor::choose_chunks(const RoundPlan& plan, RoundOutcome& out) {
  PrefillBudgetInputs in;
  in.cap = options_.prefill_chunk;
  in.slowdown = options_.prefill_slowdown;
  for (const RowPlan& row : plan.rows) in.verify_rows += row.k + 1;
  in.round_seconds = recent_round_seconds();
  std::vector<int64_t> remaining;
  for (const auto& e : prefilling_) remaining.push_back(e->prefill_length() - e->prefilled);
  for (int64_t left : remaining) in.waiting_tokens += left;
  const std::vector<int64_t> takes = share_prefill(prefill_budget(in, planner_.round_costs()), remaining);
  std::vector<TargetPrefill> chunks;
  for (size_t i = 0; i < takes.size(); ++i) {
    Entry& e = *prefilling_[i];
    std::vector<int32_t> source = e.prompt;
    if (e.resuming) source.assign(e.seq->tokens.begin(), e.seq->tokens.end() - 1);
    chunks.push_back({.target_slot = e.seq->target_slot,
                      .prompt = std::move(source),
                      .sampling = e.seq->sampling,
                      .rng = e.seq->rng,
                      .start = e.prefilled,
                      .end = e.prefilled + takes[i],
                      .sample = !e.resuming,
                      .use_prefix_cache = e.request.cache_prompt,
                      .grammar = e.resuming ? std::nullopt : e.seq->grammar});
    out.chunked.push_back(&e);
  }
  return chunks;
}

// The round on the lanes, its KV laid out by CacheManager: newcomers' cached prefixes are
// mapped and the draft rows get their blocks; the draft lane proposes for the running
// batch; every verify row, chunk and draft prefill gets its blocks; the target lane runs
// the one pass (verify rows and prompt chunks) while the draft lane prefills the chunks
// into the draft cache; CacheManager keeps what the passes wrote and accepted. Without
// overlap the lanes take turns.
awaitable<SchedulerActor::RoundOutcome> SchedulerActor::execute(RoundPlan& plan) {
  RoundOutcome out;
  std::vector<TargetPrefill> prefills = choose_chunks(plan, out);
  const auto drafting_rows =
      static_cast<size_t>(std::count_if(plan.rows.begin(), plan.rows.end(), [](const RowPlan& r) { return r.k > 0; }));
  const bool drafting = drafting_rows > 0;
  // No room, as CacheManager finds it, preempts instead of failing the round (run_round).
  ProposalLayout proposal;
  try {
    proposal = cache_.begin_round(prefills, plan);
  } catch (const SpecdError& e) {
    if (e.code() != ErrorCode::out_of_capacity) throw;
    out.no_room = true;
    co_return out;
  }
  std::exception_ptr failed;
  RoundDrafts drafts;
  if (drafting) {
    try {
      drafts = co_await lanes_.propose(plan, proposal);
    } catch (...) {
      failed = std::current_exception();
    }
    if (failed) {
      cache_.drop_proposal(proposal);
      std::rethrow_exception(failed);
    }
  } else {  // nobody drafts: no trip to the draft lane before the pass
    drafts = undrafted(plan);
  }
  // The draft prefill follows where the target's went (a prefix hit moves a chunk on).
  // It runs on the CPU the target pass would otherwise borrow, and the planner does not
  // price it: it pays where the batch drafts, and is wasted where most rows run plain
  // (a loaded server, where the newcomer will mostly run plain too). There the draft
  // slot catches up lazily if the row drafts later, and the planner prices that
  // catch-up (SpecSequence::draft_lag).
  const bool prefill_draft = batch_drafting_ && drafting_rows * 2 >= plan.rows.size();
  std::vector<DraftPrefill> prompts;
  std::vector<size_t> lagging;  // chunks the draft skips (counted once the round is laid out)
  for (size_t i = 0; i < prefills.size(); ++i) {
    SpecSequence& seq = *out.chunked[i]->seq;
    if (seq.draft_slot < 0) continue;
    if (prefill_draft) {
      prompts.push_back({seq.draft_slot, prefills[i].prompt, prefills[i].chunk_end()});
    } else {
      lagging.push_back(i);
    }
  }
  RoundLayout layout;
  try {
    layout = cache_.lay_out(drafts, proposal, prefills, prompts);
  } catch (const SpecdError& e) {
    if (e.code() != ErrorCode::out_of_capacity) throw;
    out.no_room = true;
    co_return out;
  }
  for (size_t i : lagging)
    out.chunked[i]->seq->draft_lag += static_cast<int32_t>(prefills[i].chunk_end() - prefills[i].start);
  TargetPassOutcome pass;
  try {
    if (drafting && !options_.overlap) {
      out.draft_prefill = co_await lanes_.prefill_draft(prompts, layout.draft_prefill);
      pass = co_await lanes_.target_pass(drafts, prefills, layout.pass);
    } else {
      std::tie(pass, out.draft_prefill) = co_await (lanes_.target_pass(drafts, prefills, layout.pass) &&
                                                    lanes_.prefill_draft(prompts, layout.draft_prefill));
    }
  } catch (...) {
    failed = std::current_exception();
  }
  if (failed) {
    cache_.drop(layout, prompts);
    std::rethrow_exception(failed);
  }
  cache_.keep(layout, drafts, pass.paths, prefills, prompts);
  out.round = std::move(pass.round);
  out.prefills = std::move(pass.prefills);
  for (const TargetPrefill& p : prefills) {
    out.chunk_end.push_back(p.chunk_end());
    out.cached.push_back(p.cached);
    out.prompt_tokens += p.chunk_end() - p.start;
  }
  co_return out;
}

void SchedulerActor::apply_round(RoundOutcome& outcome, double seconds) {
  std::vector<KOutcome> running;
  for (size_t i = 0; i < running_.size(); ++i) {
    try {
      apply_output(*running_[i]->seq, outcome.round.rows[i]);
    } catch (const SpecdError& error) {  // its grammar (advance_grammar): it ends alone
      running_[i]->error = RequestError{error.code(), error.message()};
    }
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
  for (size_t i = 0; i < running_.size(); ++i)
    if (!running_[i]->error) deliver_round(*running_[i], outcome.round.rows[i], planned_k_[i]);
  if (seconds > 0 && !running.empty())
    tally_round(running.size(), drafted, seconds, delivered_tokens_ - delivered_before);
  finish_where(
      running_, [](const Entry& e) { return e.finished(); }, FinishReason::length);
  start_prefilled(outcome);
}

// Newcomers whose prompt is now all in their slot take their first token and join the
// batch; the others keep prefilling in the next rounds.
void SchedulerActor::start_prefilled(RoundOutcome& outcome) {
  size_t next_first = 0;
  for (size_t i = 0; i < outcome.chunked.size(); ++i) {
    Entry& e = *outcome.chunked[i];
    e.prefilled = outcome.chunk_end[i];
    e.chunks += 1;
    // Counted once, where the prefix cache decided it: the first chunk of a new prompt.
    if (outcome.cached[i] > 0 && !e.resuming) e.cached_tokens = outcome.cached[i];
    if (e.prefilled < e.prefill_length()) continue;
    auto it = std::find_if(prefilling_.begin(), prefilling_.end(), [&](const auto& f) { return f.get() == &e; });
    running_.push_back(std::move(*it));
    prefilling_.erase(it);
    if (e.resuming) {  // back where it was: its next token is already the context's last
      e.resuming = false;
      continue;
    }
    counters_.prefix_queried_tokens += static_cast<int64_t>(e.prompt.size());
    counters_.prefix_hit_tokens += e.cached_tokens;
    const FirstToken& first = outcome.prefills.first_tokens[next_first++];
    try {
      advance_grammar(*e.seq, std::span(&first.token, 1));
    } catch (const SpecdError& error) {  // as in apply_round
      e.error = RequestError{error.code(), error.message()};
      continue;
    }
    e.seq->tokens.push_back(first.token);
    e.seq->rng = first.rng;
    deliver_first_token(e, first);
  }
  finish_where(
      running_, [](const Entry& e) { return e.finished(); }, FinishReason::length);
}

void SchedulerActor::deliver_round(Entry& e, const RoundOutput& row, int32_t planned_k) {
  const int32_t tree_nodes = row.drafted > row.depth ? row.drafted : 0;
  if (tree_nodes > 0) {
    counters_.tree_rounds += 1;
    counters_.tree_nodes_verified += tree_nodes;
    counters_.tree_nodes_accepted += row.accepted;
  }
  Burst burst = e.output.take(row.tokens, row.drafted, row.accepted, row.logprobs);
  trace_.request_round(e.actor->number(), e.actor->id(), round_timing_, planned_k, tree_nodes, burst);
  count_drafts(burst.drafted, burst.accepted);
  post_burst(e, std::move(burst));
}

void SchedulerActor::deliver_first_token(Entry& e, const FirstToken& first) {
  Burst burst = e.output.take(std::span(&first.token, 1), 0, 0, first.logprobs);
  trace_.prefill(e.actor->number(), e.actor->id(), round_timing_,
                 {static_cast<int64_t>(e.prompt.size()), e.cached_tokens, e.chunks});
  post_burst(e, std::move(burst));
}

void SchedulerActor::post_burst(Entry& e, Burst burst) {
  delivered_tokens_ += static_cast<int64_t>(burst.token_ids.size());
  if (!e.actor->post_burst(std::move(burst))) {
    e.error =
        RequestError{ErrorCode::slow_consumer, "the burst handler lagged more bursts behind than its queue holds"};
  }
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

}  // namespace specd::actors
