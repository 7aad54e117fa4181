#include "actors/engine.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <variant>

#include "actors/cache_manager.hpp"
#include "actors/model_lanes.hpp"
#include "actors/model_pair.hpp"
#include "actors/reply.hpp"
#include "actors/request_actor.hpp"
#include "actors/request_grammars.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/spawn.hpp"
#include "compute/compute_lane.hpp"
#include "compute/compute_permits.hpp"
#include "engine/base/byte_size.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/speculation/cost_calibration.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "trace/trace_recorder.hpp"

namespace specd {

using namespace specd::actors;

namespace {

// A model's KV ledger (null without the model), kept by CacheManager.
std::shared_ptr<KvLedger> make_ledger(const std::shared_ptr<LlamaModel>& model, const EngineConfig& c,
                                      const KvBudget& kv) {
  if (!model) return nullptr;
  auto ledger = std::make_shared<KvLedger>(c.max_batch, c.sequence.max_seq_len, kv.blocks, kv.block_size);
  ledger->set_prefix_caching(c.prefix_cache);
  return ledger;
}

// The lanes are the parallelism: OpenBLAS's own pool would run inside both lanes at
// once and contend for the same cores (DESIGN.md: thread pools spin). Called before
// calibration, which must time what rounds will run.
ThreadPolicy engine_thread_policy(const EngineConfig& c) {
  const bool configured = c.threads > 0 || c.target_threads > 0 || c.draft_threads > 0;
  ThreadPolicy policy = choose_thread_policy(
      {c.threads, c.target_threads, c.draft_threads, !c.draft_dir.empty(), configured ? "configured" : "auto"});
  limit_library_thread_pools();
  return policy;
}

// The target's chat template, or nothing (with the reason) when it has none: requests
// with messages are then refused. A template that is there but does not parse, or an
// explicit template file that cannot be read, is a start-up error.
std::optional<ChatTemplate> load_chat_template(const std::filesystem::path& dir, const std::filesystem::path& file,
                                               std::string& why_not) {
  try {
    return ChatTemplate::from_model_dir(dir, file);
  } catch (const SpecdError& e) {
    const bool absent = e.code() == ErrorCode::unknown_chat_template || e.code() == ErrorCode::missing_file;
    if (!file.empty() || !absent) throw;
    why_not = e.message();
    return std::nullopt;
  }
}

}  // namespace

struct Engine::Impl {
  Impl(asio::any_io_executor executor, EngineConfig c) : Impl(executor, load_pair(std::move(c))) {}
  Impl(asio::any_io_executor executor, LoadedPair p)
      : config(std::move(p.config)),
        threads(engine_thread_policy(config)),
        permits(threads.budget),
        tokenizer(std::move(p.tokenizer)),
        grammars(*tokenizer, config.target_dir, config.grammar_cache_memory),
        chat(load_chat_template(config.target_dir, config.chat_template, no_chat_reason)),
        limits{static_cast<int32_t>(p.target->config().vocab_size), config.sequence},
        has_draft(p.draft != nullptr),
        kv(p.kv),
        kv_summary(std::move(p.kv_summary)),
        weights_summary(std::move(p.weights_summary)),
        context_summary(std::move(p.context_summary)),
        trace(std::make_shared<TraceRecorder>(config.trace, static_cast<size_t>(config.trace_capacity))),
        draft_worker(
            {"draft lane", std::max(1, threads.draft_threads), &permits}, trace.get(),
            Drafter(p.draft, p.draft ? KvCache::make_storage(p.draft->config(), kv.blocks, kv.block_size) : nullptr)),
        verify_worker({"target lane", threads.target_threads, &permits}, trace.get(),
                      Verifier(p.target, KvCache::make_storage(p.target->config(), kv.blocks, kv.block_size))),
        lanes(draft_worker, verify_worker),
        live_requests(std::make_shared<std::atomic<int64_t>>(0)),
        executor(executor),
        api_strand(asio::make_strand(executor)),
        cache(config.max_batch, make_ledger(p.target, config, kv), make_ledger(p.draft, config, kv)) {
    // Calibration times the lanes' round shapes, so it runs once they exist and before
    // the scheduler that plans with its curves.
    KPlanSetup planning = calibrate();
    if (planning.round_costs) start_costs = planning.round_costs->table();
    SchedulerOptions options{.max_waiting = config.max_waiting,
                             .overlap = config.overlap,
                             .tokenizer = tokenizer.get(),
                             .eos_ids = tokenizer->eos_ids(),
                             .prefill_chunk = config.prefill_chunk,
                             .prefill_slowdown = config.prefill_slowdown,
                             .planning = std::move(planning),
                             .kv = kv};
    scheduler = std::make_unique<SchedulerActor>(asio::make_strand(executor), std::move(options), cache, lanes,
                                                 trace.get(), live_requests);
  }

  KPlanSetup calibrate();
  // The request's input as token ids: its ids, its text encoded, or its messages rendered
  // with the chat template and encoded.
  std::vector<int32_t> prompt_ids(const GenerateRequest& r) const;
  // Hands a checked request to the scheduler, or refuses it (stopping, full mailbox).
  void enqueue(const std::shared_ptr<RequestActor>& actor, GenerateRequest request, std::vector<int32_t> prompt,
               std::shared_ptr<const grammar::CompiledGrammar> grammar);

  EngineConfig config;
  ThreadPolicy threads;
  ComputePermits permits;
  std::unique_ptr<Tokenizer> tokenizer;
  RequestGrammars grammars;    // joined by ~Engine: its compile jobs hold the Impl
  std::string no_chat_reason;  // initialised by load_chat_template before `chat`
  std::optional<ChatTemplate> chat;
  RequestLimits limits;
  bool has_draft;
  KvBudget kv;  // the blocks of each model's pool
  std::string kv_summary;
  std::string weights_summary;
  std::string context_summary;
  RoundCostTable start_costs;            // the planner's curves as calibration left them
  std::shared_ptr<TraceRecorder> trace;  // shared with the burst marks a socket still holds
  DraftWorker draft_worker;              // owns the draft model and its KV storage, on the draft lane
  VerifyWorker verify_worker;            // owns the target model and its KV storage, on the target lane
  ModelLanes lanes;
  std::shared_ptr<std::atomic<int64_t>> live_requests;
  asio::any_io_executor executor;    // every actor gets its own strand of it
  asio::any_io_executor api_strand;  // where the public awaitables wait for replies
  CacheManager cache;                // both models' KV ledgers and the slots, on the scheduler's strand
  std::unique_ptr<SchedulerActor> scheduler;
  std::atomic<uint64_t> next_number{1};
  std::mutex gate;  // orders submissions before the scheduler's Stop message
  bool accepting = true;
  bool stopped = false;
};

// The K planner's setup: the engine's bound on K and the round costs, timed on each
// lane with its own intra-op budget, one lane after the other: run at once they
// disturb each other's timings.
KPlanSetup Engine::Impl::calibrate() {
  KPlanSetup planning{.sequence = config.sequence, .has_draft_model = has_draft};
  if (config.calibration_seconds <= 0) return planning;
  RoundCostModel& costs = planning.round_costs.emplace(
      config.max_batch, planning.sequence.k_max, static_cast<int32_t>(std::min<int64_t>(config.prefill_chunk, 4096)));
  const CalibrationLimits limits{config.max_batch, planning.sequence.k_max, config.calibration_seconds};
  // On a ledger of its own over the target's storage: no request holds a block yet.
  auto time_verify = [&](Verifier& v) {
    KvCache scratch(v.storage(), config.max_batch, config.sequence.max_seq_len);
    return calibrate_verify(v.model(), scratch, costs, limits);
  };
  verify_worker.run_blocking("calibrate", time_verify);
  // Without a draft model only prompt-lookup rows draft, and they need the verify curve alone.
  if (!has_draft) return planning;
  auto time_draft = [&](Drafter& d) {
    KvCache scratch(d.storage(), config.max_batch, config.sequence.max_seq_len);
    return calibrate_draft_steps(*d.model(), scratch, costs, limits);
  };
  draft_worker.run_blocking("calibrate", time_draft);
  return planning;
}

void Engine::Impl::enqueue(const std::shared_ptr<RequestActor>& actor, GenerateRequest request,
                           std::vector<int32_t> prompt, std::shared_ptr<const grammar::CompiledGrammar> grammar) {
  std::lock_guard lock(gate);
  if (!accepting) {
    actor->post_finished({FinishReason::error, engine_stopping()});
  } else if (!scheduler->try_submit({actor, std::move(request), std::move(prompt), std::move(grammar)})) {
    actor->post_finished({FinishReason::error, RequestError{ErrorCode::overloaded, "the scheduler's mailbox is full"}});
  } else if (actor->cancel_requested()) {
    // Cancelled while its grammar compiled: that Cancel may have reached the scheduler
    // before this submission did, so it goes again.
    scheduler->cancel(actor->id(), actor->number());
  }
}

std::vector<int32_t> Engine::Impl::prompt_ids(const GenerateRequest& r) const {
  if (!r.prompt_ids.empty()) return r.prompt_ids;
  if (!r.prompt.empty()) return tokenizer->encode(r.prompt, true);
  if (r.messages.empty()) return {};
  if (!chat)
    throw SpecdError(ErrorCode::unknown_chat_template,
                     "the model has no chat template (" + no_chat_reason + "); send a prompt");
  try {
    return chat->encode(r.messages, *tokenizer, r.tools_json);
  } catch (const SpecdError& e) {
    throw SpecdError(ErrorCode::bad_value, e.message());
  }
}

Engine::Engine(boost::asio::any_io_executor executor, EngineConfig config)
    : impl_(std::make_shared<Impl>(executor, std::move(config))) {
  auto impl = impl_;
  // The coroutines hold the Impl alive until they end (stop() ends them).
  spawn_logged(
      impl->scheduler->executor(), [impl] { return impl->scheduler->run(); }, "scheduler");
}

Engine::~Engine() {
  if (!impl_) return;
  impl_->grammars.join();  // its jobs hold the Impl: they end before it does
  impl_->draft_worker.stop();
  impl_->verify_worker.stop();
}

RequestHandle Engine::submit(GenerateRequest request, BurstHandler on_burst, DoneHandler on_done) {
  Impl& impl = *impl_;
  const uint64_t number = impl.next_number++;
  std::string id = request.id.empty() ? "req-" + std::to_string(number) : request.id;
  auto actor =
      std::make_shared<RequestActor>(asio::make_strand(impl.executor), *impl.scheduler,
                                     RequestActor::Setup{id, number, std::move(on_burst), std::move(on_done),
                                                         impl.config.burst_queue, impl.live_requests, impl.trace});
  actor->start();
  auto refuse = [&](RequestError error) { actor->post_finished({FinishReason::error, std::move(error)}); };
  try {
    std::vector<int32_t> prompt = impl.prompt_ids(request);
    if (request.max_tokens == 0) {  // the rest of the context; a prompt that fills it is refused below
      const int64_t rest = impl.limits.sequence.max_seq_len - static_cast<int64_t>(prompt.size());
      request.max_tokens = static_cast<int32_t>(std::clamp<int64_t>(rest, 1, INT32_MAX));
    }
    validate_request(request, prompt, impl.limits);
    request.id = id;
    if (auto ready = impl.grammars.ready(request.grammar)) {
      impl.enqueue(actor, std::move(request), std::move(prompt), std::move(*ready));
      return RequestHandle(actor);
    }
    impl.grammars.post([impl = impl_, actor, request = std::move(request), prompt = std::move(prompt)]() mutable {
      std::shared_ptr<const grammar::CompiledGrammar> grammar;
      try {
        grammar = impl->grammars.compile(request.grammar);
      } catch (const SpecdError& e) {
        actor->post_finished({FinishReason::error, RequestError{e.code(), e.message()}});
        return;
      } catch (const std::exception& e) {  // std::bad_alloc: the request fails, the thread lives
        actor->post_finished({FinishReason::error, RequestError{ErrorCode::internal, e.what()}});
        return;
      }
      impl->enqueue(actor, std::move(request), std::move(prompt), std::move(grammar));
    });
  } catch (const SpecdError& e) {
    refuse({e.code(), e.message()});
  }
  return RequestHandle(actor);
}

boost::asio::awaitable<GenerateResult> Engine::generate(GenerateRequest request, BurstHandler on_burst) {
  Reply<GenerateResult> reply;
  // If this coroutine is destroyed while waiting, the handle's destructor cancels the request.
  RequestHandle handle =
      submit(std::move(request), std::move(on_burst), [reply](GenerateResult r) { reply.set(std::move(r)); });
  // Replies are awaited on the actor strand: resuming a coroutine of a multi-threaded
  // executor from inside the initiation raced in Asio's frame recycling (ThreadSanitizer).
  auto wait = [reply]() -> boost::asio::awaitable<GenerateResult> { co_return co_await reply.get(); };
  GenerateResult result = co_await boost::asio::co_spawn(impl_->api_strand, wait, boost::asio::use_awaitable);
  if (result.error) throw SpecdError(result.error->code, result.error->message);
  co_return result;
}

void Engine::cancel(const std::string& id) { impl_->scheduler->cancel(id, 0); }

boost::asio::awaitable<void> Engine::stop(std::chrono::milliseconds deadline) {
  {
    std::lock_guard lock(impl_->gate);
    if (impl_->stopped || !impl_->accepting) co_return;
    impl_->accepting = false;
  }
  const auto until = Clock::now() + deadline;
  auto ask = [this, until]() -> boost::asio::awaitable<void> { co_await impl_->scheduler->stop(until); };
  co_await boost::asio::co_spawn(impl_->api_strand, ask, boost::asio::use_awaitable);
  impl_->draft_worker.stop();
  impl_->verify_worker.stop();
  impl_->stopped = true;
}

boost::asio::awaitable<EngineSnapshot> Engine::snapshot() {
  auto ask = [this]() -> boost::asio::awaitable<EngineSnapshot> { co_return co_await impl_->scheduler->snapshot(); };
  EngineSnapshot s = co_await boost::asio::co_spawn(impl_->api_strand, ask, boost::asio::use_awaitable);
  co_return s;
}

int64_t Engine::live_requests() const { return impl_->live_requests->load(); }
const Tokenizer* Engine::tokenizer() const { return impl_->tokenizer.get(); }
const ChatTemplate* Engine::chat_template() const { return impl_->chat ? &*impl_->chat : nullptr; }
const EngineConfig& Engine::config() const { return impl_->config; }
const ThreadPolicy& Engine::thread_policy() const { return impl_->threads; }

const std::string& Engine::kv_cache_summary() const { return impl_->kv_summary; }
std::string Engine::grammar_cache_summary() const {
  return "grammar cache " + format_bytes(impl_->config.grammar_cache_memory) + " ([engine] grammar_cache_memory)";
}
const std::string& Engine::weights_summary() const { return impl_->weights_summary; }
const std::string& Engine::context_summary() const { return impl_->context_summary; }
const RoundCostTable& Engine::start_costs() const { return impl_->start_costs; }

void Engine::write_trace(const std::filesystem::path& path) const { impl_->trace->write_chrome_json(path); }

std::string Engine::trace_json(std::optional<double> seconds, std::optional<std::string> request_id) const {
  return impl_->trace->chrome_json({seconds, std::move(request_id)});
}

RequestHandle::RequestHandle(std::shared_ptr<RequestActor> actor) : actor_(std::move(actor)) {}

RequestHandle& RequestHandle::operator=(RequestHandle&& other) noexcept {
  if (this != &other) {
    if (actor_ && !actor_->finished()) actor_->cancel();
    actor_ = std::move(other.actor_);
  }
  return *this;
}

RequestHandle::~RequestHandle() {
  if (actor_ && !actor_->finished()) actor_->cancel();
}

const std::string& RequestHandle::id() const {
  static const std::string none;
  return actor_ ? actor_->id() : none;
}

bool RequestHandle::finished() const { return !actor_ || actor_->finished(); }

void RequestHandle::cancel() {
  if (actor_) actor_->cancel();
}

}  // namespace specd
