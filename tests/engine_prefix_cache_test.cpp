// The paged KV cache on the committed default pair, through the engine: a conversation's
// next turn maps the blocks its earlier turns committed and still returns exactly the
// target's greedy tokens (both drafters, K = 0, several chunk sizes); requests preempted
// for want of blocks resume with their output unchanged; every block is free or cached
// once the requests end; a budget too small for one request is refused at start.
#include "tests/support/doctest_torch.hpp"

#include <future>

#include "actors/engine.hpp"
#include "engine/base/errors.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/planning/kv_budget.hpp"
#include "tests/support/engine_runner.hpp"
#include "tests/support/serving_reference.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

EngineConfig pair_config() {
  EngineConfig c;
  c.target_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target";
  c.draft_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "draft";
  c.max_batch = 4;
  c.sequence.max_seq_len = 512;
  c.calibration_seconds = 0;  // K as asked
  return c;
}

SpecSettings spec_of(int i) {
  SpecSettings s;
  s.enabled = i != 0;
  s.k = 4;
  s.drafter = i == 2 ? DrafterKind::lookup : DrafterKind::model;
  return s;
}

// Runs requests at once and returns their results in order.
std::vector<GenerateResult> run_all(Engine& engine, const std::vector<GenerateRequest>& requests) {
  std::vector<std::promise<GenerateResult>> done(requests.size());
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < requests.size(); ++i) {
    handles.push_back(
        engine.submit(requests[i], {}, [&done, i](GenerateResult result) { done[i].set_value(std::move(result)); }));
  }
  std::vector<GenerateResult> out;
  for (auto& d : done) out.push_back(d.get_future().get());
  return out;
}

GenerateRequest greedy(std::string prompt, int32_t max_tokens, SpecSettings spec) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.spec = spec;
  return r;
}

}  // namespace

TEST_CASE("a conversation's next turn maps its cached prefix and keeps the target's greedy tokens") {
  constexpr int32_t kMaxTokens = 20;
  for (int64_t chunk : {0, 7, 64}) {
    for (int drafting = 0; drafting < 3; ++drafting) {
      CAPTURE(chunk);
      CAPTURE(drafting);
      IoThreads io(1);
      EngineConfig c = pair_config();
      c.prefill_chunk = chunk;
      Engine engine(io.io().get_executor(), c);
      // Long enough for full blocks: a turn maps what the last turn's prompt committed
      // (its answer's tokens may tokenize differently once they are text in the prompt).
      std::string conversation = test_prompts(1)[0] + " and so the night goes on, my lord, and so it goes";
      int64_t cached_before = 0;
      for (int turn = 0; turn < 3; ++turn) {
        CAPTURE(turn);
        const GenerateResult r = run_all(engine, {greedy(conversation, kMaxTokens, spec_of(drafting))})[0];
        REQUIRE_FALSE(r.error.has_value());
        CHECK(r.token_ids == solo_greedy(conversation, kMaxTokens));
        const int32_t block = c.kv_block_size;
        if (turn == 0) {
          CHECK(r.usage.cached_tokens == 0);
        } else {
          // At least the last turn's prompt in full blocks, the prompt's last token excepted.
          CHECK(r.usage.cached_tokens >= ((cached_before - 1) / block) * block);
          CHECK(r.usage.cached_tokens > 0);
          CHECK(r.usage.cached_tokens < r.usage.prompt_tokens);
        }
        cached_before = r.usage.prompt_tokens;
        conversation += r.text + "\nFirst Citizen:\nSpeak, speak.\n";
      }
      const EngineSnapshot s = io.run(engine.snapshot());  // blocks return before the result: no wait
      CHECK(s.prefix_hit_tokens > 0);
      CHECK(s.prefix_queried_tokens > s.prefix_hit_tokens);
      CHECK(s.kv_blocks_referenced_target == 0);  // the conversation's blocks stay cached, unheld
      CHECK(s.kv_blocks_referenced_draft == 0);
      io.run(engine.stop(std::chrono::seconds(5)));
    }
  }
}

TEST_CASE("a request that opts out of the prefix cache computes its whole prompt") {
  IoThreads io(1);
  EngineConfig c = pair_config();
  c.trace = true;
  Engine engine(io.io().get_executor(), c);
  const std::string prompt = test_prompts(2)[1] + std::string(200, 'o');
  GenerateRequest first = greedy(prompt, 8, spec_of(1));
  CHECK(run_all(engine, {first})[0].usage.cached_tokens == 0);
  GenerateRequest again = first;
  again.cache_prompt = false;
  const GenerateResult uncached = run_all(engine, {again})[0];
  CHECK(uncached.usage.cached_tokens == 0);
  const GenerateResult cached = run_all(engine, {first})[0];
  CHECK(cached.usage.cached_tokens > 0);
  CHECK(cached.token_ids == uncached.token_ids);
  // The request's prefill span says what the cache held.
  const std::string trace = engine.trace_json();
  CHECK(trace.find("\"cached_tokens\":" + std::to_string(cached.usage.cached_tokens)) != std::string::npos);
  CHECK(trace.find("\"chunks\":1") != std::string::npos);
  io.run(engine.stop(std::chrono::seconds(5)));
}

TEST_CASE("requests preempted for want of KV blocks resume with their greedy tokens unchanged") {
  constexpr int32_t kMaxTokens = 120;
  const auto texts = test_prompts(4);
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < 4; ++i) {
    GenerateRequest r = greedy(texts[i], kMaxTokens, spec_of(1 + i % 2));
    r.ignore_eos = true;
    requests.push_back(r);
  }
  EngineConfig c = pair_config();
  c.sequence.max_seq_len = 192;
  std::vector<std::vector<int32_t>> alone;  // each request by itself, with room to spare
  {
    IoThreads io(1);
    Engine reference(io.io().get_executor(), c);
    for (const GenerateRequest& r : requests) alone.push_back(run_all(reference, {r})[0].token_ids);
    io.run(reference.stop(std::chrono::seconds(5)));
  }
  // Room for one request at its longest and a little more: four must take turns.
  const int64_t block_bytes =
      c.kv_block_size * (KvCache::bytes_per_token(load_model_config(c.target_dir / "config.json")) +
                         KvCache::bytes_per_token(load_model_config(c.draft_dir / "config.json")));
  c.kv_cache_memory = (blocks_for(c.sequence.max_seq_len + c.sequence.k_max + 1, c.kv_block_size) + 3) * block_bytes;
  for (bool prefix_cache : {true, false}) {
    CAPTURE(prefix_cache);
    c.prefix_cache = prefix_cache;
    IoThreads io(1);
    Engine engine(io.io().get_executor(), c);
    const std::vector<GenerateResult> results = run_all(engine, requests);
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      REQUIRE_FALSE(results[i].error.has_value());
      CHECK(results[i].token_ids.size() == static_cast<size_t>(kMaxTokens));
      CHECK(results[i].token_ids == alone[i]);
    }
    const EngineSnapshot s = io.run(engine.snapshot());  // blocks return before the result: no wait
    CHECK(s.preemptions > 0);
    CHECK(s.kv_blocks_referenced_target == 0);
    CHECK(s.kv_blocks_referenced_draft == 0);
    io.run(engine.stop(std::chrono::seconds(5)));
  }
}

TEST_CASE("a KV budget too small for one request of max_seq_len is refused at start, naming what it needs") {
  IoThreads io(1);
  EngineConfig c = pair_config();
  c.kv_cache_memory = 4096;
  CHECK_THROWS_WITH_AS(Engine(io.io().get_executor(), c), doctest::Contains("for one request of max_seq_len 512"),
                       SpecdError);
}
