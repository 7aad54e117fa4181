#include "actors/scheduler_trace.hpp"

#include "engine/request/request_output.hpp"
#include "trace/trace_recorder.hpp"

namespace specd::actors {

namespace {
double micros(const LaneSpan& s) { return std::chrono::duration<double, std::micro>(s.end - s.start).count(); }
}  // namespace

SchedulerTrace::SchedulerTrace(TraceRecorder* trace) : trace_(trace && trace->enabled() ? trace : nullptr) {}

void SchedulerTrace::queued(uint64_t request, const std::string& id, std::chrono::steady_clock::time_point submitted,
                            std::chrono::steady_clock::time_point admitted) {
  if (trace_) trace_->request_span(request, id, "queued", submitted, admitted);
}

// Both prefills run inside the round, on their lanes and possibly at the same time, so
// the request's track holds one span and the lane jobs are reached by flows.
void SchedulerTrace::prefill(uint64_t request, const std::string& id, const RoundTiming& round,
                             const PrefillCounts& counts) {
  if (!trace_) return;
  TraceArgs args{{"prompt_tokens", static_cast<double>(counts.prompt_tokens)},
                 {"cached_tokens", static_cast<double>(counts.cached_tokens)},
                 {"chunks", static_cast<double>(counts.chunks)}};
  if (round.target_prefill.ran()) args.emplace_back("target_us", micros(round.target_prefill));
  if (round.draft_prefill.ran()) args.emplace_back("draft_us", micros(round.draft_prefill));
  trace_->request_span(request, id, "prefill", round.start, round.end, std::move(args));
  if (round.target_prefill.ran())
    trace_->flow("prefill", request, id, round.start, "target lane", round.target_prefill.middle());
  if (round.draft_prefill.ran())
    trace_->flow("prefill", request, id, round.start, "draft lane", round.draft_prefill.middle());
}

void SchedulerTrace::request_round(uint64_t request, const std::string& id, const RoundTiming& round, int32_t planned_k,
                                   int32_t tree_nodes, const Burst& burst) {
  if (!trace_) return;
  TraceArgs args{{"k_planned", static_cast<double>(planned_k)},
                 {"drafted", static_cast<double>(burst.drafted)},
                 {"accepted", static_cast<double>(burst.accepted)},
                 {"tokens", static_cast<double>(burst.token_ids.size())}};
  if (tree_nodes > 0) {  // a tree: its nodes verified, and the accepted path's length
    args.emplace_back("tree_nodes", static_cast<double>(tree_nodes));
    args.emplace_back("accepted_path", static_cast<double>(burst.accepted));
  }
  trace_->request_span(request, id, "round", round.start, round.end, std::move(args));
  if (round.verify.ran()) trace_->flow("round", request, id, round.start, "target lane", round.verify.middle());
}

void SchedulerTrace::round(const RoundTiming& round, const RoundSummary& s, const std::optional<BatchPlan>& plan) {
  if (!trace_) return;
  TraceArgs args{{"rows", static_cast<double>(s.rows)},
                 {"newcomers", static_cast<double>(s.newcomers)},
                 {"drafting_rows", static_cast<double>(s.drafting_rows)},
                 {"drafted", static_cast<double>(s.drafted)},
                 {"accepted", static_cast<double>(s.accepted)},
                 {"tokens", static_cast<double>(s.tokens)},
                 {"prompt_tokens", static_cast<double>(s.prompt_tokens)}};
  if (plan && s.rows > 0) {
    // Planned figures cover the running rows only (newcomers are prefilled, not planned).
    args.emplace_back("planned_tokens", plan->expected_tokens);
    args.emplace_back("planned_ms", plan->expected_seconds * 1e3);
    args.emplace_back("undrafted_planned_ms", plan->undrafted_seconds * 1e3);
    if (plan->refresh) args.emplace_back("refresh", 1.0);
  }
  trace_->complete("round", "scheduler", round.start, std::chrono::steady_clock::now(), std::move(args));
}

}  // namespace specd::actors
