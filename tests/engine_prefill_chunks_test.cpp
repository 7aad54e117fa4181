// Chunked prefill on the committed default pair: whatever prefill_chunk (a token at a
// time, a few, more than any prompt), batches of requests with both drafters and K = 0
// return exactly their solo greedy tokens, and their usage counts the whole prompt.
#include "tests/support/doctest_torch.hpp"

#include <future>

#include "actors/engine.hpp"
#include "tests/support/engine_runner.hpp"
#include "tests/support/serving_reference.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

EngineConfig chunked_config(int64_t prefill_chunk) {
  EngineConfig c;
  c.target_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target";
  c.draft_dir = std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "draft";
  c.max_batch = 8;
  c.sequence.max_seq_len = 256;
  c.calibration_seconds = 0;  // K as asked: the test is about prefill
  c.prefill_chunk = prefill_chunk;
  return c;
}

SpecSettings spec_of(size_t i) {
  SpecSettings s;
  s.enabled = i % 3 != 0;
  s.k = 4;
  s.drafter = i % 3 == 2 ? DrafterKind::lookup : DrafterKind::model;
  return s;
}

}  // namespace

TEST_CASE("greedy output is the same whatever the prefill chunk, for both drafters and K = 0") {
  const auto texts = test_prompts(6);
  constexpr int32_t kMaxTokens = 24;
  for (int64_t chunk : {1, 5, 16, 4096}) {
    CAPTURE(chunk);
    IoThreads io(1);
    Engine engine(io.io().get_executor(), chunked_config(chunk));
    std::vector<std::promise<GenerateResult>> done(texts.size());
    std::vector<RequestHandle> handles;
    for (size_t i = 0; i < texts.size(); ++i) {
      GenerateRequest r;
      r.prompt = texts[i] + "\nwith more words, so that the prompts differ in length " + std::string(i * 7, 'a');
      r.max_tokens = kMaxTokens;
      r.spec = spec_of(i);
      handles.push_back(engine.submit(r, {}, [&done, i](GenerateResult result) { done[i].set_value(result); }));
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      CAPTURE(i);
      const GenerateResult result = done[i].get_future().get();
      REQUIRE_FALSE(result.error.has_value());
      const std::string prompt =
          texts[i] + "\nwith more words, so that the prompts differ in length " + std::string(i * 7, 'a');
      CHECK(result.token_ids == solo_greedy(prompt, kMaxTokens));
      CHECK(result.usage.prompt_tokens == static_cast<int32_t>(engine.tokenizer()->encode(prompt, true).size()));
    }
    io.run(engine.stop(std::chrono::seconds(5)));
  }
}
