// RequestOutput, the one place that decides a request is finished: each stop condition
// in token order, the kept burst's drafted/accepted counts, streamed text that never
// holds a stop string, and the held-back tail.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/base/errors.hpp"
#include "engine/request/request_output.hpp"
#include "engine/tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

OutputLimits limits(int32_t max_tokens, std::vector<int32_t> eos = {}, int64_t max_seq_len = 1024) {
  return {std::move(eos), {}, max_tokens, 3, max_seq_len};
}

const Tokenizer& tokenizer() {
  static const auto t = load_tokenizer(std::filesystem::path(SPECD_SOURCE_DIR) / "models" / "target");
  return *t;
}

}  // namespace

TEST_CASE("EOS inside the accepted drafts cuts the burst after it and the counts describe what was kept") {
  RequestOutput out(nullptr, limits(100, {7}));
  const std::vector<int32_t> first = {4};
  CHECK(out.take(first, 0, 0).token_ids == first);
  CHECK_FALSE(out.finished());
  const std::vector<int32_t> burst = {5, 7, 8, 9, 10};  // 4 drafts accepted, then the bonus
  const Burst chunk = out.take(burst, 4, 4);
  CHECK(chunk.token_ids == std::vector<int32_t>{5, 7});
  CHECK(chunk.drafted == 2);
  CHECK(chunk.accepted == 2);
  REQUIRE(out.finished());
  CHECK(*out.finished() == FinishReason::stop);
  CHECK(out.generated() == 3);
  CHECK(out.stats().drafted == 2);  // the statistics count the same kept round
  CHECK(out.stats().accepted == 2);
  CHECK(out.stats().emitted == 2);
  CHECK(out.stats().rejections == 0);
  CHECK(out.take(burst, 4, 4).token_ids.empty());  // nothing follows a stop
}

TEST_CASE("a burst cut at the correction token keeps its counts") {
  RequestOutput out(nullptr, limits(100, {9}));
  const std::vector<int32_t> burst = {5, 6, 9};  // 2 of 4 drafts accepted, then the correction
  const Burst chunk = out.take(burst, 4, 2);
  CHECK(chunk.token_ids == burst);
  CHECK(chunk.drafted == 4);
  CHECK(chunk.accepted == 2);
  CHECK(*out.finished() == FinishReason::stop);
}

TEST_CASE("max_tokens keeps exactly that many tokens; EOS on the last one is still a stop") {
  RequestOutput length(nullptr, limits(3));
  const std::vector<int32_t> burst = {1, 2, 3, 4, 5};
  CHECK(length.take(burst, 4, 4).token_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(*length.finished() == FinishReason::length);
  RequestOutput eos_last(nullptr, limits(3, {3}));
  eos_last.take(burst, 4, 4);
  CHECK(*eos_last.finished() == FinishReason::stop);
}

TEST_CASE("the context may not outgrow the cache: length once prompt + generated exceeds max_seq_len") {
  RequestOutput out(nullptr, limits(100, {}, 8));  // a 3-token prompt
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  out.take(five, 4, 4);  // 8 tokens: g still fits
  CHECK_FALSE(out.finished());
  const std::vector<int32_t> one = {6};
  out.take(one, 0, 0);
  CHECK(*out.finished() == FinishReason::length);
}

TEST_CASE("a stop string split across tokens and bursts ends the request at the token that completes it") {
  const std::vector<int32_t> ids = tokenizer().encode("good night, sweet prince: and flights", false);
  const std::string full = tokenizer().decode(ids);
  const std::string stop = "sweet prince";
  REQUIRE(full.find(stop) != std::string::npos);
  OutputLimits l = limits(100);
  l.stop = {stop};
  RequestOutput out(&tokenizer(), l);
  std::string text;
  std::vector<int32_t> kept;
  for (size_t i = 0; i < ids.size() && !out.finished(); i += 2) {  // bursts of two tokens
    const std::vector<int32_t> burst(ids.begin() + i, ids.begin() + std::min(ids.size(), i + 2));
    const Burst chunk = out.take(burst, 1, 1);
    text += chunk.text;
    kept.insert(kept.end(), chunk.token_ids.begin(), chunk.token_ids.end());
  }
  REQUIRE(out.finished());
  CHECK(*out.finished() == FinishReason::stop);
  CHECK(text == full.substr(0, full.find(stop)));
  CHECK(out.flush().empty());
  // The last kept token completes the stop string; without it the text lacks it.
  CHECK(tokenizer().decode(kept).find(stop) != std::string::npos);
  CHECK(tokenizer().decode(std::vector<int32_t>(kept.begin(), kept.end() - 1)).find(stop) == std::string::npos);
}

TEST_CASE("text that could start a stop string is held back and flushed when the request ends otherwise") {
  OutputLimits l = limits(100);
  l.stop = {"night, sweet"};
  RequestOutput out(&tokenizer(), l);
  const std::vector<int32_t> ids = tokenizer().encode("good night", false);
  const Burst chunk = out.take(ids, 0, 0);
  CHECK(chunk.text == "good ");
  CHECK(out.flush() == "night");
}

TEST_CASE("stop strings without a tokenizer are refused") {
  OutputLimits l = limits(10);
  l.stop = {"x"};
  CHECK_THROWS_AS(RequestOutput(nullptr, l), SpecdError);
}
