// The actor runtime on the committed default pair: continuous batching returns each
// request exactly its solo greedy tokens, mixed speculation settings share a batch,
// cancellation, overload, stop with requests in flight, lane overlap in the trace, and
// slots and memory back to baseline after many requests with random cancels.
#include "tests/support/doctest_torch.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>

#include <boost/json.hpp>

#include "actors/engine.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/engine_runner.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/serving_reference.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

const std::filesystem::path kModels = std::filesystem::path(SPECD_SOURCE_DIR) / "models";

EngineConfig default_config() {
  EngineConfig c;
  c.target_dir = kModels / "target";
  c.draft_dir = kModels / "draft";
  c.max_batch = 32;
  c.sequence.max_seq_len = 256;
  return c;
}

// Collects a callback-form request's bursts and result.
struct Collector {
  std::mutex mutex;
  std::vector<Burst> bursts;
  std::atomic<int> burst_count{0};
  std::promise<GenerateResult> done;
  BurstHandler on_burst() {
    return [this](const Burst& b) {
      std::lock_guard lock(mutex);
      bursts.push_back(b);
      ++burst_count;
    };
  }
  DoneHandler on_done() {
    return [this](GenerateResult r) { done.set_value(std::move(r)); };
  }
};

// Submits `count` identical greedy requests at once ("HAMLET:\n", 16 tokens).
void submit_burst(Engine& engine, int count, std::vector<std::unique_ptr<Collector>>& collectors,
                  std::vector<RequestHandle>& handles) {
  for (int i = 0; i < count; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    GenerateRequest r;
    r.prompt = "HAMLET:\n";
    r.max_tokens = 16;
    handles.push_back(engine.submit(r, {}, collectors.back()->on_done()));
  }
}

SpecSettings spec_variant(size_t i) {
  SpecSettings s;
  switch (i % 6) {
    case 0:
      s.enabled = false;
      break;
    case 1:
      s.k = 1;
      break;
    case 2:
      s.k = 4;
      break;
    case 3:
      s.k = 8;
      break;
    case 4:
      s.adaptive = true;
      break;
    case 5:
      s.drafter = DrafterKind::lookup;
      s.k = 3;
      break;
  }
  return s;
}

EngineSnapshot snapshot(IoThreads& io, Engine& engine) { return io.run(engine.snapshot()); }

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

}  // namespace

TEST_CASE("32 concurrent greedy requests with mixed speculation settings each return their solo tokens") {
  IoThreads io(2);
  Engine engine(io.io().get_executor(), default_config());
  const auto texts = test_prompts(32);
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < texts.size(); ++i) {
    collectors.push_back(std::make_unique<Collector>());
    GenerateRequest r;
    r.prompt = texts[i];
    r.max_tokens = 20 + static_cast<int32_t>(i % 5);
    r.spec = spec_variant(i);
    handles.push_back(engine.submit(r, collectors.back()->on_burst(), collectors.back()->on_done()));
  }
  int64_t drafted = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    GenerateResult result = collectors[i]->done.get_future().get();
    CAPTURE(i);
    REQUIRE_FALSE(result.error.has_value());
    CHECK(result.token_ids == solo_greedy(texts[i], 20 + static_cast<int32_t>(i % 5)));
    // The bursts carry exactly the result's tokens, in order, and only accepted drafts.
    // Each token's piece of text is there too; without stop strings they add up to the
    // text, apart from a held-back tail the final burst carries alone.
    std::vector<int32_t> streamed;
    std::string text, pieces;
    for (const Burst& b : collectors[i]->bursts) {
      streamed.insert(streamed.end(), b.token_ids.begin(), b.token_ids.end());
      text += b.text;
      CHECK(b.accepted <= b.drafted);
      CHECK(b.token_ids.size() <= static_cast<size_t>(b.accepted) + 1);
      CHECK(b.pieces.size() == b.token_ids.size());
      for (const std::string& piece : b.pieces) pieces += piece;
      if (b.token_ids.empty()) pieces += b.text;
    }
    CHECK(streamed == result.token_ids);
    CHECK(text == result.text);
    CHECK(pieces == result.text);
    CHECK(result.usage.completion_tokens == static_cast<int32_t>(result.token_ids.size()));
    if (i % 6 == 0) CHECK(result.spec.drafted == 0);
    drafted += result.spec.drafted;
  }
  CHECK(drafted > 0);
  const EngineSnapshot s = io.run(engine.snapshot());  // blocks return before the result: no wait
  CHECK(s.target_slots_in_use == 0);
  CHECK(s.draft_slots_in_use == 0);
  CHECK(s.kv_blocks_referenced_target == 0);
  CHECK(s.kv_blocks_referenced_draft == 0);
  CHECK(s.draft_tokens == drafted);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("cancelling in the middle of a stream stops its bursts and frees both slots and their KV blocks") {
  IoThreads io(1);
  Engine engine(io.io().get_executor(), default_config());
  std::promise<GenerateResult> done;
  std::atomic<int> bursts{0};
  std::atomic<int> after_cancel{0};
  std::atomic<bool> cancelled{false};
  RequestHandle handle;
  std::mutex handle_mutex;
  GenerateRequest r;
  r.prompt = "ROMEO:\n";
  r.max_tokens = 200;
  r.ignore_eos = true;
  {
    std::lock_guard lock(handle_mutex);
    handle = engine.submit(
        r,
        [&](const Burst&) {
          if (cancelled) after_cancel += 1;
          if (++bursts == 3) {
            std::lock_guard lock(handle_mutex);
            handle.cancel();
            cancelled = true;
          }
        },
        [&](GenerateResult res) { done.set_value(std::move(res)); });
  }
  GenerateResult result = done.get_future().get();
  CHECK(result.finish_reason == FinishReason::cancelled);
  CHECK(after_cancel == 0);
  CHECK(result.token_ids.size() < 200);
  const EngineSnapshot s = io.run(engine.snapshot());  // blocks return before the result: no wait
  CHECK(s.target_slots_in_use == 0);
  CHECK(s.draft_slots_in_use == 0);
  CHECK(s.kv_blocks_referenced_target == 0);
  CHECK(s.kv_blocks_referenced_draft == 0);
  CHECK(s.requests_cancelled == 1);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("dropping the request handle cancels the request; cancel by id does too") {
  IoThreads io(1);
  Engine engine(io.io().get_executor(), default_config());
  GenerateRequest r;
  r.prompt = "JULIET:\n";
  r.max_tokens = 200;
  r.ignore_eos = true;
  std::promise<GenerateResult> dropped_done, by_id_done;
  {
    RequestHandle h = engine.submit(r, {}, [&](GenerateResult res) { dropped_done.set_value(std::move(res)); });
  }
  r.id = "by-id";
  RequestHandle kept = engine.submit(r, {}, [&](GenerateResult res) { by_id_done.set_value(std::move(res)); });
  engine.cancel("by-id");
  CHECK(dropped_done.get_future().get().finish_reason == FinishReason::cancelled);
  GenerateResult by_id = by_id_done.get_future().get();
  CHECK(by_id.finish_reason == FinishReason::cancelled);
  CHECK(by_id.id == "by-id");
  CHECK(snapshot(io, engine).target_slots_in_use == 0);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("submissions beyond the waiting bound fail with overloaded; the rest complete") {
  IoThreads io(1);
  EngineConfig c = default_config();
  c.max_batch = 1;
  c.max_waiting = 2;
  Engine engine(io.io().get_executor(), c);
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<RequestHandle> handles;
  submit_burst(engine, 8, collectors, handles);
  int overloaded = 0, completed = 0;
  for (auto& c : collectors) {
    GenerateResult r = c->done.get_future().get();
    if (r.error) {
      CHECK(r.error->code == ErrorCode::overloaded);
      CHECK(r.finish_reason == FinishReason::error);
      ++overloaded;
    } else {
      CHECK(r.token_ids == solo_greedy("HAMLET:\n", 16));
      ++completed;
    }
  }
  CHECK(overloaded >= 5);  // one generating, at most two waiting when the burst of eight arrives
  CHECK(completed >= 1);
  CHECK(overloaded + completed == 8);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("a burst of as many requests as free slots plus waiting places is accepted whole") {
  IoThreads io(1);
  EngineConfig c = default_config();
  c.max_batch = 2;
  c.max_waiting = 2;
  Engine engine(io.io().get_executor(), c);
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<RequestHandle> handles;
  submit_burst(engine, 4, collectors, handles);  // two take the slots at once, two wait
  for (auto& collector : collectors) {
    GenerateResult r = collector->done.get_future().get();
    CHECK_FALSE(r.error.has_value());
    CHECK(r.token_ids == solo_greedy("HAMLET:\n", 16));
  }
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("bad requests fail with their error code and do not disturb others") {
  IoThreads io(1);
  Engine engine(io.io().get_executor(), default_config());
  auto error_of = [&](GenerateRequest r) {
    Collector c;
    RequestHandle h = engine.submit(std::move(r), {}, c.on_done());
    GenerateResult res = c.done.get_future().get();
    return res.error ? res.error->code : ErrorCode::internal;
  };
  GenerateRequest bad;
  bad.prompt = "x";
  bad.max_tokens = -1;  // 0 is the rest of the context
  CHECK(error_of(bad) == ErrorCode::bad_value);
  bad.max_tokens = 4;
  bad.sampling.top_p = 1.5;
  CHECK(error_of(bad) == ErrorCode::bad_value);
  bad.sampling.top_p = 1.0;
  bad.spec.k = 99;
  CHECK(error_of(bad) == ErrorCode::bad_value);
  bad.spec.k = 4;
  bad.messages = {{"user", "x"}};
  CHECK(error_of(bad) == ErrorCode::bad_value);  // two inputs
  bad.messages.clear();
  bad.prompt.clear();
  bad.prompt_ids = std::vector<int32_t>(300, 5);
  CHECK(error_of(bad) == ErrorCode::out_of_capacity);
  bad.prompt_ids = {1, 999999};
  CHECK(error_of(bad) == ErrorCode::bad_value);
  bad.prompt_ids.clear();
  bad.messages = {{"narrator", "x"}};
  CHECK(error_of(bad) == ErrorCode::bad_value);
  GenerateRequest good;
  good.prompt = "ROMEO:\n";
  good.max_tokens = 12;
  GenerateResult ok = io.run(engine.generate(good));
  CHECK(ok.token_ids == solo_greedy("ROMEO:\n", 12));
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("max_seq_len above the models' max_position_embeddings is capped before the caches are sized") {
  IoThreads io(1);
  EngineConfig c = default_config();
  c.max_batch = 2;
  c.sequence.max_seq_len = int64_t{1} << 24;  // uncapped, the caches would need terabytes
  c.calibration_seconds = 0;
  Engine engine(io.io().get_executor(), c);
  CHECK(engine.config().sequence.max_seq_len == 1024);  // both committed models' max_position_embeddings
  Collector too_long;
  GenerateRequest r;
  r.prompt_ids = std::vector<int32_t>(1024, 5);
  RequestHandle h = engine.submit(r, {}, too_long.on_done());
  const GenerateResult refused = too_long.done.get_future().get();
  REQUIRE(refused.error);
  CHECK(refused.error->code == ErrorCode::out_of_capacity);
  GenerateRequest good;
  good.prompt = "ROMEO:\n";
  good.max_tokens = 12;
  CHECK(io.run(engine.generate(good)).token_ids == solo_greedy("ROMEO:\n", 12));
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("stop with requests in flight ends them within the deadline and refuses new ones") {
  IoThreads io(1);
  // Requests that outlast the deadline on any host: one token a round (no speculation),
  // 1000 rounds. 200 tokens with drafts took under the 100 ms on a warm process.
  EngineConfig config = default_config();
  config.sequence.max_seq_len = 1024;
  Engine engine(io.io().get_executor(), config);
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 4; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    GenerateRequest r;
    r.prompt = "KING HENRY VI:\n";
    r.max_tokens = 1000;
    r.ignore_eos = true;
    r.spec.enabled = false;
    handles.push_back(engine.submit(r, collectors.back()->on_burst(), collectors.back()->on_done()));
  }
  while (collectors[0]->burst_count == 0) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  io.run(engine.stop(std::chrono::milliseconds(100)));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  for (auto& c : collectors) {
    GenerateResult r = c->done.get_future().get();
    CHECK(r.finish_reason == FinishReason::cancelled);
    CHECK(r.token_ids.size() < 1000);
  }
  Collector late;
  GenerateRequest r;
  r.prompt = "x";
  RequestHandle h = engine.submit(r, {}, late.on_done());
  GenerateResult refused = late.done.get_future().get();
  REQUIRE(refused.error.has_value());
  CHECK(refused.error->code == ErrorCode::shutting_down);
}

TEST_CASE("stop returns as soon as the requests in flight end by themselves before its deadline") {
  // The scheduler once went idle after such requests and waited for a message that never
  // came, so stop() never returned. The Stop must arrive while the request still runs:
  // 200 tokens take dozens of rounds after the first burst.
  IoThreads io(1);
  Engine engine(io.io().get_executor(), default_config());
  Collector running;
  GenerateRequest r;
  r.prompt = "KING HENRY VI:\n";
  r.max_tokens = 200;
  r.ignore_eos = true;
  RequestHandle h = engine.submit(r, running.on_burst(), running.on_done());
  while (running.burst_count == 0) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  auto stopped = boost::asio::co_spawn(io.io(), engine.stop(std::chrono::seconds(60)), boost::asio::use_future);
  const GenerateResult result = running.done.get_future().get();
  CHECK(result.finish_reason == FinishReason::length);  // it ended by itself, not by the deadline
  CHECK(result.token_ids.size() == 200);
  REQUIRE(stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  stopped.get();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
}

TEST_CASE("newcomers' draft prefill overlaps the running batch's verify pass on the other lane") {
  IoThreads io(1);
  EngineConfig c = default_config();
  c.trace = true;
  Engine engine(io.io().get_executor(), c);
  GenerateRequest long_request;
  long_request.prompt = "GLOUCESTER:\n";
  long_request.max_tokens = 120;
  long_request.ignore_eos = true;
  std::vector<std::unique_ptr<Collector>> collectors;
  collectors.push_back(std::make_unique<Collector>());
  std::atomic<int> bursts{0};
  std::vector<RequestHandle> handles;
  handles.push_back(engine.submit(
      long_request, [&](const Burst&) { ++bursts; }, collectors.back()->on_done()));
  while (bursts < 5) std::this_thread::yield();
  for (int i = 0; i < 6; ++i) {  // admitted at round boundaries while the long request runs
    collectors.push_back(std::make_unique<Collector>());
    GenerateRequest r;
    r.prompt = test_prompts(8)[i] + std::string(200, ' ').substr(0, 40 * i);
    r.max_tokens = 8;
    handles.push_back(engine.submit(r, {}, collectors.back()->on_done()));
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
  int64_t completion_tokens = 0;
  for (auto& col : collectors) {
    const GenerateResult result = col->done.get_future().get();
    CHECK_FALSE(result.error.has_value());
    completion_tokens += result.usage.completion_tokens;
  }
  io.run(engine.stop(std::chrono::seconds(5)));
  const auto path = std::filesystem::temp_directory_path() / "specd_overlap_trace.json";
  engine.write_trace(path);
  std::ifstream in(path);
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(json.find("\"traceEvents\"") != std::string::npos);
  CHECK(json.find("\"target lane\"") != std::string::npos);
  CHECK(json.find("\"draft prefill\"") != std::string::npos);
  // The scheduler's round events (process 1) account for every token the requests
  // received; so do the requests' own tracks (process 2): a first token per prefill, then
  // their rounds; each request ends with one done event.
  double round_tokens = 0, request_round_tokens = 0, prefills = 0, done = 0;
  int rounds = 0;
  std::map<int64_t, int> prefill_flows_into;  // lane thread id -> prefill flows landing there
  std::map<int64_t, std::string> lane_of_tid;
  struct LaneJob {
    int64_t tid;
    std::string label;
    double handed_us, start_us, end_us;
  };
  std::vector<LaneJob> lane_jobs;  // from when each job was handed to its lane to its end
  const boost::json::value trace = boost::json::parse(json);
  for (const auto& event : trace.at("traceEvents").as_array()) {
    const auto& e = event.as_object();
    if (e.at("pid").as_int64() != 2 && e.at("ph") == "X" && e.contains("args")) {
      const auto& args = e.at("args").as_object();
      const double start = e.at("ts").to_number<double>();
      const double waited = args.contains("waited_us") ? args.at("waited_us").to_number<double>() : 0;
      lane_jobs.push_back({e.at("tid").as_int64(), e.at("name").as_string().c_str(), start - waited, start,
                           start + e.at("dur").to_number<double>()});
    }
    const bool request_track = e.at("pid").as_int64() == 2;
    if (request_track && e.at("name") == "prefill" && e.at("ph") == "X") {
      prefills += 1;
      CHECK(e.at("args").as_object().at("target_us").to_number<double>() > 0);  // the lane job's length
    }
    if (e.at("name") == "prefill" && e.at("ph") == "f") prefill_flows_into[e.at("tid").as_int64()] += 1;
    if (!request_track && e.at("name") == "thread_name")
      lane_of_tid[e.at("tid").as_int64()] = e.at("args").at("name").as_string().c_str();
    if (request_track && e.at("name") == "done") done += 1;
    if (e.at("name") != "round" || e.at("ph") != "X") continue;
    const auto& args = e.at("args").as_object();
    if (request_track) {
      request_round_tokens += args.at("tokens").to_number<double>();
      continue;
    }
    ++rounds;
    round_tokens += args.at("tokens").to_number<double>();
    CHECK(args.at("rows").to_number<double>() + args.at("prompt_tokens").to_number<double>() >= 1);
  }
  CHECK(rounds >= 10);
  CHECK(round_tokens == static_cast<double>(completion_tokens));
  CHECK(prefills + request_round_tokens == static_cast<double>(completion_tokens));
  CHECK(done == static_cast<double>(collectors.size()));
  // Each prefill flows to the target lane's prefill job, and to the draft lane's when the
  // draft slot was prefilled in that round (the planner may defer it while K is 0).
  std::map<std::string, int> flows_by_lane;
  for (const auto& [tid, flows] : prefill_flows_into) flows_by_lane[lane_of_tid.at(tid)] += flows;
  CHECK(flows_by_lane["target lane"] == static_cast<int>(prefills));
  CHECK(flows_by_lane["draft lane"] >= 1);
  CHECK(flows_by_lane["draft lane"] <= static_cast<int>(prefills));
  // A newcomer's draft prefill is handed to the draft lane while the batch's verify pass
  // is in the target lane's hands. Whether the two also compute at the same instant is
  // up to the OS: on a loaded host a lane thread may wake after the other lane's short
  // job ended, so the check is on the hand-over, not on the run intervals.
  int overlapping = 0;
  for (const LaneJob& a : lane_jobs) {
    if (a.label != "draft prefill") continue;
    CHECK(lane_of_tid.at(a.tid) == "draft lane");
    CHECK(a.handed_us <= a.start_us);
    for (const LaneJob& b : lane_jobs) {
      if (b.label.starts_with("verify") && a.handed_us < b.end_us && b.handed_us < a.end_us) ++overlapping;
    }
  }
  CHECK(overlapping >= 1);
}
