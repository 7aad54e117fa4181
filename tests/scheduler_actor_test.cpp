// SchedulerActor against fake lanes (no model weights): admission order and batching,
// the one place that ends a request (EOS, stop strings, max_tokens, a full cache) and
// that no further round runs for it, cancel at a round boundary, the waiting bound, and
// KV slots back in CacheManager after every ending.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include <boost/asio/strand.hpp>

#include <filesystem>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include "actors/cache_manager.hpp"
#include "actors/request_actor.hpp"
#include "actors/round_lanes.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/spawn.hpp"
#include "engine/planning/prefill_budget.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/engine_runner.hpp"

using namespace specd;
using namespace specd::actors;
using namespace specd::testing;

namespace {

// Lanes that emit a scripted continuation per request: a request's prompt is one token,
// its tag, and its i-th generated token is script[tag][i]. The drafter proposes the
// script's next K tokens and the target accepts `accept` of them (all by default), then
// adds the next script token. Every call comes from the scheduler's strand.
class FakeLanes : public RoundLanes {
 public:
  std::map<int32_t, std::vector<int32_t>> script;
  int32_t accept = 1 << 30;
  std::function<void(int32_t round)> on_round;      // called in each verify, before it answers
  std::vector<int32_t> prefill_order;               // tags, in prefill order
  std::vector<std::pair<int64_t, int64_t>> chunks;  // each target prefill's [start, end)
  std::vector<size_t> chunk_beside;                 // per chunk: verify rows in the same pass
  std::vector<std::vector<int32_t>> rounds;         // tags of each verify pass's rows
  int32_t draft_prefills = 0;
  int32_t fail_pass = 0;                      // the target pass of this verify round throws (0: none)
  std::vector<std::vector<int32_t>> resumes;  // prompts prefilled without sampling

  awaitable<LaneSpan> prefill_draft(std::vector<DraftPrefill>& prompts, const DraftPrefillLayout&) override {
    draft_prefills += static_cast<int32_t>(prompts.size());
    co_return LaneSpan{};
  }
  awaitable<RoundDrafts> propose(RoundPlan& plan, const ProposalLayout& layout) override {
    RoundDrafts drafts;
    for (size_t b = 0; b < plan.rows.size(); ++b) {  // a draft slot holds what it was fed: the context
      if (layout.rows[b].slot >= 0) drafts.kept.push_back({layout.rows[b].slot, plan.rows[b].context});
    }
    for (RowPlan& row : plan.rows) {
      drafts.rows.emplace_back();
      DraftedRow& d = drafts.rows.back();
      for (int32_t j = 0; j < row.k; ++j) {
        d.drafts.push_back(next(row.context, j));
        d.parents.push_back(j - 1);  // a chain
      }
      d.plan = std::move(row);
    }
    co_return drafts;
  }
  awaitable<TargetPassOutcome> target_pass(RoundDrafts& drafts, std::vector<TargetPrefill>& prompts,
                                           const PassLayout&) override {
    TargetPassOutcome out;
    for (TargetPrefill& p : prompts) {
      chunks.emplace_back(p.start, p.chunk_end());
      chunk_beside.push_back(drafts.rows.size());
      if (p.start == p.cached) prefill_order.push_back(p.prompt.front());
      if (!p.sample && p.completes()) resumes.push_back(p.prompt);
      if (p.completes() && p.sample) out.prefills.first_tokens.push_back({script.at(p.prompt.front()).at(0), p.rng});
    }
    if (drafts.rows.empty()) co_return out;
    if (static_cast<int32_t>(rounds.size()) + 1 == fail_pass) {
      fail_pass = 0;
      throw std::runtime_error("the target lane failed");
    }
    rounds.emplace_back();
    for (DraftedRow& d : drafts.rows) {
      rounds.back().push_back(d.plan.context.front());
      RoundOutput row;
      row.drafted = d.plan.k;
      row.accepted = std::min(accept, d.plan.k);
      for (int32_t j = 0; j <= row.accepted; ++j) row.tokens.push_back(next(d.plan.context, j));
      std::vector<int32_t> path(static_cast<size_t>(row.accepted));  // a chain: nodes 0..accepted-1
      std::iota(path.begin(), path.end(), 0);
      out.paths.push_back(std::move(path));
      row.rng = d.plan.rng;
      out.round.rows.push_back(std::move(row));
    }
    if (on_round) on_round(static_cast<int32_t>(rounds.size()));
    co_return out;
  }
  // Rounds whose verify pass had a row of request `tag`.
  int32_t rounds_with(int32_t tag) const {
    int32_t n = 0;
    for (const auto& r : rounds) n += std::count(r.begin(), r.end(), tag) > 0;
    return n;
  }

 private:
  int32_t next(const std::vector<int32_t>& context, int32_t ahead) const {
    const std::vector<int32_t>& s = script.at(context.front());
    const size_t at = context.size() - 1 + static_cast<size_t>(ahead);
    return at < s.size() ? s[at] : 0;
  }
};

// Counting tokens: tag t generates 100 t + 1, 100 t + 2, ...
std::vector<int32_t> counting(int32_t tag, int32_t n) {
  std::vector<int32_t> s;
  for (int32_t i = 1; i <= n; ++i) s.push_back(100 * tag + i);
  return s;
}

struct Outcome {
  GenerateResult result;
  std::vector<Burst> bursts;
};

// A scheduler, a cache manager and fake lanes on an io_context; requests go straight to
// the scheduler as validated requests whose prompt is their ids. The test submits, then start()s.
class Harness {
 public:
  // ledger_blocks: the pools CacheManager keeps, when they are not the ones the
  // scheduler's options say (0: the same).
  Harness(int32_t slots, SchedulerOptions options, int32_t ledger_blocks = 0)
      : io_(1),
        ledger_(ledger(slots, options, ledger_blocks)),
        cache_(slots, ledger_, options.planning.has_draft_model ? ledger(slots, options, ledger_blocks) : nullptr),
        scheduler_(asio::make_strand(io_.io()), options, cache_, lanes, nullptr, nullptr) {}
  // Starts the scheduler: everything submitted before arrives at its first boundary,
  // so admission and the rounds do not depend on thread timing.
  void start() {
    if (std::exchange(started_, true)) return;
    spawn_logged(
        scheduler_.executor(), [this] { return scheduler_.run(); }, "scheduler");
  }
  void cancel(const std::string& id) { scheduler_.cancel(id, 0); }
  ~Harness() { stop(); }

  // Submits a request; returns the actor (to cancel) and where its outcome arrives.
  std::shared_ptr<RequestActor> submit(const std::string& id, GenerateRequest request) {
    auto outcome = std::make_shared<Outcome>();
    auto& promise = promises_.emplace_back();
    futures_.push_back(promise.get_future());
    auto on_burst = [outcome](const Burst& b) { outcome->bursts.push_back(b); };
    auto on_done = [outcome, &promise](GenerateResult r) {
      outcome->result = std::move(r);
      promise.set_value(std::move(*outcome));
    };
    auto actor =
        std::make_shared<RequestActor>(asio::make_strand(io_.io()), scheduler_,
                                       RequestActor::Setup{id, next_number_++, on_burst, on_done, 64, nullptr});
    actor->start();
    std::vector<int32_t> prompt = request.prompt_ids;
    if (!scheduler_.try_submit({actor, std::move(request), std::move(prompt)})) FAIL("the scheduler's mailbox is full");
    return actor;
  }
  // The outcomes of the requests submitted since the last call.
  std::vector<Outcome> wait_all() {
    start();
    std::vector<Outcome> out;
    for (; waited_ < futures_.size(); ++waited_) out.push_back(futures_[waited_].get());
    return out;
  }
  // Before stop(). CacheManager's slots as the scheduler reports them (its strand is the
  // only one that touches them).
  CacheUsage usage() {
    const EngineSnapshot s = snapshot();
    return {.target_in_use = s.target_slots_in_use, .draft_in_use = s.draft_slots_in_use, .slots = s.slots_total};
  }
  EngineSnapshot snapshot() { return io_.run(scheduler_.snapshot()); }
  void stop() {
    start();
    if (stopped_) return;
    stopped_ = true;
    io_.run(scheduler_.stop(Clock::now() + std::chrono::seconds(5)));
  }

  FakeLanes lanes;

 private:
  IoThreads io_;
  // A ledger as the engine's CacheManager keeps one per model.
  static std::shared_ptr<KvLedger> ledger(int32_t slots, const SchedulerOptions& o, int32_t blocks) {
    const int64_t seq = o.planning.sequence.max_seq_len;
    if (blocks == 0) blocks = o.kv.blocks > 0 ? o.kv.blocks : KvLedger::blocks_to_hold(slots, seq, o.kv.block_size);
    return std::make_shared<KvLedger>(slots, seq, blocks, o.kv.block_size);
  }
  std::shared_ptr<KvLedger> ledger_;  // the target's
  CacheManager cache_;
  SchedulerActor scheduler_;
  std::list<std::promise<Outcome>> promises_;
  std::vector<std::future<Outcome>> futures_;
  uint64_t next_number_ = 1;
  size_t waited_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

GenerateRequest request(int32_t tag, int32_t max_tokens, int32_t k = 3) {
  GenerateRequest r;
  r.prompt_ids = {tag};
  r.max_tokens = max_tokens;
  r.spec.k = k;
  return r;
}

SchedulerOptions options(int32_t max_waiting = 16, int64_t max_seq_len = 256) {
  SchedulerOptions o;
  o.max_waiting = max_waiting;
  o.planning.has_draft_model = true;
  o.planning.sequence.max_seq_len = max_seq_len;
  return o;
}

}  // namespace

TEST_CASE("requests are admitted in arrival order as slots free, join the batch at a boundary, and get their tokens") {
  Harness h(2, options());
  for (int32_t tag = 1; tag <= 4; ++tag) h.lanes.script[tag] = counting(tag, 20);
  h.submit("a", request(1, 9));
  h.submit("b", request(2, 5));
  h.submit("c", request(3, 5));
  h.submit("d", request(4, 1));
  const auto outcomes = h.wait_all();
  for (int32_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const int32_t max_tokens = std::vector<int32_t>{9, 5, 5, 1}[i];
    CHECK(outcomes[i].result.token_ids == counting(i + 1, max_tokens));
    CHECK(outcomes[i].result.finish_reason == FinishReason::length);
  }
  // Two slots: 1 and 2 first; 3 takes 2's slot when 2 ends (after 1 + 4 tokens: the
  // first token, then one round of K = 3 plus the bonus), 4 takes the next free one.
  CHECK(h.lanes.prefill_order == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(h.lanes.rounds.front() == std::vector<int32_t>{1, 2});
  CHECK(h.lanes.rounds_with(2) == 1);
  CHECK(h.lanes.rounds_with(4) == 0);  // max_tokens 1: the prefill's token ends it
  CHECK(h.lanes.draft_prefills == 4);
  const CacheUsage usage = h.usage();
  CHECK(usage.target_in_use == 0);
  CHECK(usage.draft_in_use == 0);
}

TEST_CASE("EOS ends a request in the round it appears: no further round, and the cut burst counts what it kept") {
  SchedulerOptions eos = options();
  eos.eos_ids = {107};  // the 7th token: the first draft of the second round (1 + 5 + 5)
  Harness h(2, eos);
  h.lanes.script[1] = counting(1, 20);
  GenerateRequest r = request(1, 50, 4);
  h.submit("eos", r);
  const Outcome o = h.wait_all().front();
  CHECK(o.result.token_ids == counting(1, 7));
  CHECK(o.result.finish_reason == FinishReason::stop);
  CHECK(h.lanes.rounds_with(1) == 2);
  REQUIRE(o.bursts.size() == 3);
  CHECK(o.bursts[1].token_ids == std::vector<int32_t>{102, 103, 104, 105, 106});
  CHECK(o.bursts[2].token_ids == std::vector<int32_t>{107});
  // Drafted 4, all accepted, cut after 1 accepted draft: the frame says 1 and 1.
  CHECK(o.bursts[2].drafted == 1);
  CHECK(o.bursts[2].accepted == 1);
  CHECK(o.result.usage.completion_tokens == 7);
  // The request's statistics add up the frames' counts: 4 + 1 drafted, 4 + 1 accepted.
  CHECK(o.result.spec.drafted == 5);
  CHECK(o.result.spec.accepted == 5);
  CHECK(o.result.spec.emitted == 6);
  CHECK(h.usage().target_in_use == 0);
}

TEST_CASE("a stop string completed across token boundaries ends the request before another round runs") {
  const auto tokenizer = load_tokenizer(std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target");
  SchedulerOptions o = options();
  o.tokenizer = tokenizer.get();
  Harness h(2, o);
  const std::vector<int32_t> text = tokenizer->encode("To be, or not to be: that is the question. Whether", false);
  REQUIRE(text.size() > 12);
  // The tag is a token too: the first generated token is text[0].
  h.lanes.script[text.front()] = std::vector<int32_t>(text.begin() + 1, text.end());
  GenerateRequest r = request(text.front(), 200, 3);
  r.stop = {"that is"};
  h.submit("stop", r);
  const Outcome out = h.wait_all().front();
  CHECK(out.result.finish_reason == FinishReason::stop);
  const std::string all = tokenizer->decode(std::vector<int32_t>(text.begin() + 1, text.end()));
  REQUIRE(all.find("that is") != std::string::npos);
  CHECK(out.result.text == all.substr(0, all.find("that is")));
  // The token that completed the stop string is the last one kept and sent.
  const std::vector<int32_t>& ids = out.result.token_ids;
  REQUIRE(!ids.empty());
  CHECK(tokenizer->decode(ids).find("that is") != std::string::npos);
  CHECK(tokenizer->decode(std::vector<int32_t>(ids.begin(), ids.end() - 1)).find("that is") == std::string::npos);
  // Rounds emit 4 tokens each after the first: the request ran exactly the rounds that
  // produced its tokens, and none after.
  CHECK(h.lanes.rounds_with(text.front()) == static_cast<int32_t>((ids.size() - 1 + 3) / 4));
  CHECK(h.usage().target_in_use == 0);
}

TEST_CASE("the context may not outgrow max_seq_len: the request ends with length at the cache's end") {
  Harness h(1, options(16, 12));
  h.lanes.script[1] = counting(1, 40);
  h.submit("long", request(1, 100, 4));
  const Outcome o = h.wait_all().front();
  // Prompt 1 + 12 generated = 13 tokens: g is the one the cache has no room to feed.
  CHECK(o.result.token_ids == counting(1, 12));
  CHECK(o.result.finish_reason == FinishReason::length);
  for (const auto& round : h.lanes.rounds) CHECK(round.size() == 1);
}

TEST_CASE("cancel takes effect at the next round boundary and frees both slots") {
  Harness h(2, options());
  h.lanes.script[1] = counting(1, 90);
  h.lanes.script[2] = counting(2, 90);
  h.lanes.on_round = [&h](int32_t round) {
    if (round == 2) h.cancel("victim");
  };
  h.submit("victim", request(1, 80));
  h.submit("other", request(2, 21));
  const auto outcomes = h.wait_all();
  CHECK(outcomes[0].result.finish_reason == FinishReason::cancelled);
  CHECK(h.lanes.rounds_with(1) == 2);  // cancelled during round 2: no round 3 for it
  CHECK(outcomes[1].result.finish_reason == FinishReason::length);
  CHECK(outcomes[1].result.token_ids == counting(2, 21));
  const CacheUsage usage = h.usage();
  CHECK(usage.target_in_use == 0);
  CHECK(usage.draft_in_use == 0);
}

TEST_CASE("a target pass that throws fails its round's requests, gives its blocks back, and the engine serves on") {
  SchedulerOptions o = options();
  o.kv.block_size = 4;
  Harness h(2, o);
  h.lanes.script[1] = counting(1, 40);
  h.lanes.script[2] = counting(2, 40);
  h.lanes.fail_pass = 3;
  h.submit("a", request(1, 30));
  h.submit("b", request(2, 30));
  const auto failed = h.wait_all();
  for (const Outcome& f : failed) {
    CHECK(f.result.finish_reason == FinishReason::error);
    REQUIRE(f.result.error);
    CHECK(f.result.error->code == ErrorCode::internal);
  }
  EngineSnapshot s = h.snapshot();  // the layout's blocks and the requests' slots are back
  CHECK(s.kv_blocks_referenced_target == 0);
  CHECK(s.kv_blocks_referenced_draft == 0);
  CHECK(s.target_slots_in_use == 0);
  h.submit("after", request(1, 10));
  const Outcome after = h.wait_all().front();
  CHECK(after.result.token_ids == counting(1, 10));
  s = h.snapshot();
  CHECK(s.kv_blocks_referenced_target == 0);
  CHECK(s.kv_blocks_referenced_draft == 0);
}

TEST_CASE("beyond max_waiting submissions fail with overloaded; the others complete") {
  Harness h(1, options(2));
  for (int32_t tag = 1; tag <= 5; ++tag) h.lanes.script[tag] = counting(tag, 10);
  for (int32_t tag = 1; tag <= 5; ++tag) h.submit("r" + std::to_string(tag), request(tag, 3));
  const auto outcomes = h.wait_all();
  int32_t overloaded = 0, completed = 0;
  for (const Outcome& o : outcomes) {
    if (o.result.error && o.result.error->code == ErrorCode::overloaded) ++overloaded;
    if (o.result.finish_reason == FinishReason::length && o.result.token_ids.size() == 3) ++completed;
  }
  // One slot: one request runs and two wait; with the queue full, two more are refused.
  CHECK(overloaded == 2);
  CHECK(completed == 3);
  CHECK(h.usage().target_in_use == 0);
}

TEST_CASE("a duplicate id in flight is refused and the first request is untouched") {
  Harness h(2, options());
  h.lanes.script[1] = counting(1, 10);
  h.lanes.script[2] = counting(2, 10);
  h.submit("same", request(1, 6));
  h.submit("same", request(2, 6));
  const auto outcomes = h.wait_all();
  CHECK(outcomes[0].result.token_ids == counting(1, 6));
  REQUIRE(outcomes[1].result.error);
  CHECK(outcomes[1].result.error->code == ErrorCode::duplicate_id);
  CHECK(h.lanes.prefill_order == std::vector<int32_t>{1});
}

TEST_CASE("a long prompt is prefilled prefill_chunk tokens a round while the running batch keeps its rounds") {
  SchedulerOptions o = options();
  o.prefill_chunk = 4;
  Harness h(2, o);
  h.lanes.script[1] = counting(1, 40);
  h.lanes.script[2] = counting(2, 40);
  h.submit("running", request(1, 12, 1));
  GenerateRequest long_prompt = request(2, 3, 1);
  for (int32_t t = 50; t < 59; ++t) long_prompt.prompt_ids.push_back(t);  // 10 tokens
  h.submit("long", long_prompt);
  const auto outcomes = h.wait_all();
  // Round 1: both prompts start (1 + 3 tokens); rounds 2 and 3: 4 and 3 more tokens of
  // the long one beside the running request's verify pass; round 4: both verify.
  CHECK(h.lanes.chunks == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 3}, {3, 7}, {7, 10}});
  REQUIRE(h.lanes.rounds.size() >= 3);
  CHECK(h.lanes.rounds[0] == std::vector<int32_t>{1});
  CHECK(h.lanes.rounds[1] == std::vector<int32_t>{1});
  CHECK(h.lanes.rounds[2] == std::vector<int32_t>{1, 2});
  CHECK(outcomes[0].result.token_ids == counting(1, 12));
  // Its first token comes from the prefill, the next from verify passes after the prompt.
  CHECK(outcomes[1].result.token_ids == std::vector<int32_t>{201, 211, 212});
  CHECK(outcomes[1].result.usage.prompt_tokens == 10);
  CHECK(h.usage().target_in_use == 0);
}

TEST_CASE("while others decode, the chunk is priced from the pass curve; alone, a prompt takes prefill_chunk") {
  SchedulerOptions o = options();
  o.prefill_chunk = 8;
  o.prefill_slowdown = 2;
  RoundCostModel costs(4, 8, 64);
  for (int32_t rows = 1; rows <= 64; rows *= 2) costs.observe_verify(rows, rows * 1.0);  // a second a row: dear
  o.planning.round_costs = costs;
  Harness h(2, o);
  h.lanes.script[1] = counting(1, 40);
  h.lanes.script[2] = counting(2, 40);
  std::atomic<int32_t> rounds{0};
  std::atomic<bool> submitted{false};
  h.lanes.on_round = [&](int32_t round) {
    rounds = round;
    if (round == 2)  // two rounds without prompts measured: the long prompt arrives now
      while (!submitted) std::this_thread::yield();
  };
  h.submit("running", request(1, 24, 1));
  h.start();
  while (rounds < 2) std::this_thread::yield();
  GenerateRequest long_prompt = request(2, 2, 1);
  for (int32_t t = 50; t < 149; ++t) long_prompt.prompt_ids.push_back(t);  // 100 tokens
  h.submit("long", long_prompt);
  submitted = true;
  const auto outcomes = h.wait_all();
  CHECK(outcomes[0].result.token_ids == counting(1, 24));
  CHECK(outcomes[1].result.usage.prompt_tokens == 100);
  REQUIRE(h.lanes.chunks.size() == h.lanes.chunk_beside.size());
  int32_t beside = 0, alone = 0;
  for (size_t i = 1; i < h.lanes.chunks.size(); ++i) {  // chunk 0: the running request's prompt
    CAPTURE(i);
    const int64_t width = h.lanes.chunks[i].second - h.lanes.chunks[i].first;
    if (h.lanes.chunk_beside[i] > 0) {
      // The floor: a second a row is far more than the rounds take.
      CHECK(width == std::min<int64_t>(PrefillBudgetInputs{}.floor, 100 - h.lanes.chunks[i].first));
      beside += 1;
    } else {
      CHECK(width == std::min<int64_t>(8, 100 - h.lanes.chunks[i].first));
      alone += 1;
    }
  }
  CHECK(beside >= 1);
  CHECK(alone >= 1);
}

TEST_CASE("a prefix cache hit moves the first chunk past the cached tokens; cache_prompt false computes them") {
  SchedulerOptions o = options();
  o.prefill_chunk = 4;
  o.kv.block_size = 4;
  Harness h(2, o);
  h.lanes.script[2] = counting(2, 40);
  GenerateRequest long_prompt = request(2, 3, 1);
  for (int32_t t = 50; t < 59; ++t) long_prompt.prompt_ids.push_back(t);  // 10 tokens
  h.submit("warm", long_prompt);
  const auto warm = h.wait_all();  // its chunks commit the prompt's two full blocks
  CHECK(warm[0].result.usage.cached_tokens == 0);
  h.lanes.chunks.clear();
  h.submit("hit", long_prompt);
  long_prompt.cache_prompt = false;
  h.submit("miss", long_prompt);
  const auto outcomes = h.wait_all();
  // The hit's chunk of 4 runs from token 8: the whole prompt in its first round; the
  // other one takes the round's remaining budget of 0 and goes on in chunks of 4.
  CHECK(h.lanes.chunks == std::vector<std::pair<int64_t, int64_t>>{{8, 10}, {0, 4}, {4, 8}, {8, 10}});
  CHECK(outcomes[0].result.usage.cached_tokens == 8);
  CHECK(outcomes[1].result.usage.cached_tokens == 0);
  CHECK(outcomes[0].result.token_ids == outcomes[1].result.token_ids);
  CHECK(outcomes[0].result.token_ids == warm[0].result.token_ids);
  const EngineSnapshot s = h.snapshot();
  CHECK(s.prefix_queried_tokens == 30);
  CHECK(s.prefix_hit_tokens == 8);
  CHECK(s.kv_blocks_referenced_target == 0);  // all back in the step the requests ended
}

namespace {

// Two requests of 30 tokens (K 2) in pools of 48 positions; both finish with their
// scripted tokens.
std::vector<Outcome> two_that_do_not_fit(Harness& h) {
  h.lanes.script[1] = counting(1, 40);
  h.lanes.script[2] = counting(2, 40);
  h.submit("older", request(1, 30, 2));
  h.submit("younger", request(2, 30, 2));
  std::vector<Outcome> outcomes = h.wait_all();
  CHECK(outcomes[0].result.token_ids == counting(1, 30));
  CHECK(outcomes[1].result.token_ids == counting(2, 30));
  return outcomes;
}

}  // namespace

TEST_CASE("when CacheManager finds no room for a round after all, the youngest request is preempted, not failed") {
  SchedulerOptions o = options(16, 64);
  o.planning.sequence.k_max = 2;
  o.kv = {0, 4};        // the scheduler's own estimate: no bound, so it never preempts first
  Harness h(2, o, 12);  // CacheManager's pools: 48 positions, two requests of 30 tokens do not fit
  const auto outcomes = two_that_do_not_fit(h);
  CHECK(outcomes[0].result.finish_reason == FinishReason::length);
  CHECK(outcomes[1].result.finish_reason == FinishReason::length);
  const EngineSnapshot s = h.snapshot();
  CHECK(s.preemptions >= 1);
  CHECK(s.requests_failed == 0);
  CHECK(s.kv_blocks_referenced_target == 0);
}

TEST_CASE("when the KV blocks run out the youngest request is preempted and resumes with its output unchanged") {
  SchedulerOptions o = options();
  o.planning.sequence.k_max = 2;
  o.kv = {12, 4};  // 48 positions: two requests of 30 tokens do not fit at once
  Harness h(2, o);
  const auto outcomes = two_that_do_not_fit(h);
  std::vector<int32_t> streamed;  // what the client saw: each token once, in order
  for (const Burst& b : outcomes[1].bursts) streamed.insert(streamed.end(), b.token_ids.begin(), b.token_ids.end());
  CHECK(streamed == counting(2, 30));
  CHECK(outcomes[1].result.finish_reason == FinishReason::length);
  // It resumed from its prompt and the tokens it had sent but the last, sampling nothing.
  REQUIRE(h.lanes.resumes.size() == 1);
  const std::vector<int32_t>& resumed = h.lanes.resumes[0];
  CHECK(resumed.front() == 2);
  CHECK(std::equal(resumed.begin() + 1, resumed.end(), counting(2, 30).begin()));
  CHECK(resumed.size() >= 20);
  const EngineSnapshot s = h.snapshot();
  CHECK(s.preemptions == 1);
  CHECK(s.kv_blocks_total == 12);
  CHECK(s.kv_blocks_referenced_target == 0);
  CHECK(h.usage().target_in_use == 0);
}
