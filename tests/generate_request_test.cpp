// The one validation of a request (engine/request/generate_request): every bad value is
// refused with bad_value (out_of_capacity for a prompt that does not fit) and a message
// naming the field; a good request passes.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/request/generate_request.hpp"

using namespace specd;

namespace {

const RequestLimits kLimits{.vocab_size = 100, .sequence = {.max_seq_len = 16, .k_max = 8}};

GenerateRequest good() {
  GenerateRequest r;
  r.prompt_ids = {1, 2, 3};
  r.max_tokens = 4;
  return r;
}

// The refusal's code and message, or "" when the request passes.
std::string refusal(const GenerateRequest& r, const std::vector<int32_t>& ids = {1, 2, 3}) {
  try {
    validate_request(r, ids, kLimits);
    return "";
  } catch (const SpecdError& e) {
    return std::string(error_code_name(e.code())) + ": " + e.message();
  }
}

}  // namespace

TEST_CASE("a request within the limits passes") {
  CHECK(refusal(good()) == "");
  GenerateRequest chat;
  chat.messages = {{"user", "hi"}};
  CHECK(refusal(chat) == "");
  GenerateRequest text;
  text.prompt = "ROMEO:";
  text.spec.k = 8;
  text.sampling = {.temperature = 100.0,
                   .top_k = 5,
                   .top_p = 0.5,
                   .min_p = 1.0,
                   .repetition_penalty = 100.0,
                   .presence_penalty = 2.0,
                   .frequency_penalty = -2.0,
                   .logit_bias = {{99, 100.0f}, {0, -100.0f}},
                   .seed = 7,
                   .logprobs = 20};
  CHECK(refusal(text) == "");
}

TEST_CASE("logit_bias ids beyond the vocabulary and top_logprobs beyond 20 are refused") {
  GenerateRequest r = good();
  r.sampling.logit_bias = {{100, 1.0f}};
  CHECK(refusal(r) == "bad_value: logit_bias: token 100 outside the vocabulary");
  r.sampling.logit_bias = {};
  r.sampling.logprobs = 21;
  CHECK(refusal(r) == "bad_value: top_logprobs must be in [0, 20]");
}

TEST_CASE("sampling values out of range name the field") {
  auto with = [](auto change) {
    GenerateRequest r = good();
    change(r.sampling);
    return refusal(r);
  };
  CHECK(with([](SamplingParams& s) { s.temperature = -0.1; }) == "bad_value: temperature must be in [0, 100]");
  CHECK(with([](SamplingParams& s) { s.temperature = 1e300; }) == "bad_value: temperature must be in [0, 100]");
  CHECK(with([](SamplingParams& s) { s.temperature = std::nan(""); }) == "bad_value: temperature must be in [0, 100]");
  CHECK(with([](SamplingParams& s) { s.top_p = 0; }) == "bad_value: top_p must be in (0, 1]");
  CHECK(with([](SamplingParams& s) { s.top_p = 1.5; }) == "bad_value: top_p must be in (0, 1]");
  CHECK(with([](SamplingParams& s) { s.top_k = -1; }) == "bad_value: top_k must be >= 0 (0 disables it)");
  CHECK(with([](SamplingParams& s) { s.repetition_penalty = 0; }) ==
        "bad_value: repetition_penalty must be in (0, 100]");
}

TEST_CASE("limits, stop strings and K") {
  GenerateRequest r = good();
  r.max_tokens = 0;
  CHECK(refusal(r) == "bad_value: max_tokens must be >= 1");
  r = good();
  r.stop = {"ok", ""};
  CHECK(refusal(r) == "bad_value: a stop string is empty");
  r = good();
  r.spec.k = 9;
  CHECK(refusal(r) == "bad_value: speculative.k must be in [0, 8]");
  r.spec.k = -1;
  CHECK(refusal(r) == "bad_value: speculative.k must be in [0, 8]");
  r.spec.enabled = false;  // K is not used
  CHECK(refusal(r) == "");
  r = good();
  r.spec.tree.mode = TreeMode::fixed;
  r.spec.tree.widths.assign(9, 1);
  CHECK(refusal(r) == "bad_value: speculative.tree is deeper than the engine's k_max 8");
}

TEST_CASE("the input: exactly one, its ids in the vocabulary, fitting max_seq_len") {
  GenerateRequest none = good();
  none.prompt_ids.clear();
  CHECK(refusal(none, {}) == "bad_value: the prompt is empty");
  GenerateRequest two = good();
  two.prompt = "x";
  CHECK(refusal(two) == "bad_value: give one of prompt, messages or prompt ids");
  GenerateRequest blank;
  blank.prompt = " ";
  CHECK(refusal(blank, {}) == "bad_value: the prompt has no tokens");
  CHECK(refusal(good(), {1, 100}) == "bad_value: prompt id 100 outside the vocabulary");
  CHECK(refusal(good(), {1, -1}) == "bad_value: prompt id -1 outside the vocabulary");
  CHECK(refusal(good(), std::vector<int32_t>(16, 1)) ==
        "out_of_capacity: prompt of 16 tokens does not fit max_seq_len 16");
  CHECK(refusal(good(), std::vector<int32_t>(15, 1)) == "");
}
