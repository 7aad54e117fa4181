// The cached incremental forward must equal the full-sequence causal forward, for one
// row and for batches whose rows have different lengths and cache positions.
#include "tests/support/doctest_torch.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <numbers>

#include "engine/base/errors.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::random_model;
using specd::testing::tiny_config;

namespace {

at::Tensor random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(0, vocab, {n}, at::kLong);
}

at::Tensor full_logits(LlamaModel& m, const at::Tensor& tokens) { return m.forward_full(tokens.unsqueeze(0))[0]; }

double max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// The cached forward against libtorch's F32 full forward. The cache stores keys and
// values in BF16 (relative rounding up to 2^-9), which these random tiny models (logits
// of std ~1.7) carry to the logits: the largest difference over this file's cases is
// 0.089, and 4.5e-4 when the full forward's keys and values are rounded to BF16 too.
constexpr double kCachedTolerance = 0.15;

}  // namespace

TEST_CASE("incremental decode through the KV cache equals the full forward at several lengths") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 7);
  for (int64_t length : {1, 2, 7, 33, 100}) {
    CAPTURE(length);
    at::Tensor tokens = random_tokens(length, 97, 100 + length);
    at::Tensor reference = full_logits(*model, tokens);
    KvCache cache(model->config(), 2, 128, KvCache::blocks_to_hold(2, 128));
    const int32_t slot = 0;
    const int64_t prefill = length / 2 + 1;
    ForwardBatch first{tokens.narrow(0, 0, prefill).unsqueeze(0), {slot}, {prefill}};
    at::Tensor logits = model->forward(first, cache, LogitsFor::all_positions)[0];
    CHECK(max_diff(logits, reference.narrow(0, 0, prefill)) < kCachedTolerance);
    for (int64_t t = prefill; t < length; ++t) {
      ForwardBatch step{tokens.narrow(0, t, 1).unsqueeze(0), {slot}, {1}};
      at::Tensor last = model->forward(step, cache, LogitsFor::last_position)[0];
      CHECK(max_diff(last, reference[t]) < kCachedTolerance);
    }
    CHECK(cache.length(slot) == length);
  }
}

TEST_CASE("batched rows of different lengths and cache positions match each row alone") {
  torch::InferenceMode guard;
  for (bool tied : {true, false}) {
    CAPTURE(tied);
    auto model = random_model(tiny_config(tied), 11);
    const std::vector<int64_t> lengths = {5, 17, 2, 9};
    std::vector<at::Tensor> seqs, refs;
    for (size_t r = 0; r < lengths.size(); ++r) {
      seqs.push_back(random_tokens(lengths[r] + 6, 97, 200 + r));
      refs.push_back(full_logits(*model, seqs.back()));
    }
    KvCache cache(model->config(), 6, 64, KvCache::blocks_to_hold(6, 64));
    // Slot 0 stays unused, so rows use slots 1..4 in a non-trivial order.
    std::vector<int32_t> slots = {4, 3, 2, 1};

    // Prefill: right-padded [4, 17].
    const int64_t T = *std::max_element(lengths.begin(), lengths.end());
    at::Tensor batch_tokens = at::zeros({4, T}, at::kLong);
    for (size_t r = 0; r < lengths.size(); ++r)
      batch_tokens[r].narrow(0, 0, lengths[r]).copy_(seqs[r].narrow(0, 0, lengths[r]));
    ForwardBatch prefill{batch_tokens, slots, lengths};
    at::Tensor all = model->forward(prefill, cache, LogitsFor::all_positions);
    for (size_t r = 0; r < lengths.size(); ++r) {
      CHECK(max_diff(all[r].narrow(0, 0, lengths[r]), refs[r].narrow(0, 0, lengths[r])) < kCachedTolerance);
    }
    // A verify-shaped step: 3 tokens per row at each row's own position, then 1-token steps
    // with different valid lengths (rows 0 and 2 feed 1 token, rows 1 and 3 feed 3).
    std::vector<int64_t> pos = lengths;
    for (const std::vector<int64_t>& feed : {std::vector<int64_t>{3, 3, 3, 3}, std::vector<int64_t>{1, 3, 1, 3}}) {
      at::Tensor step_tokens = at::zeros({4, 3}, at::kLong);
      for (size_t r = 0; r < 4; ++r) step_tokens[r].narrow(0, 0, feed[r]).copy_(seqs[r].narrow(0, pos[r], feed[r]));
      ForwardBatch step{step_tokens, slots, feed};
      at::Tensor out = model->forward(step, cache, LogitsFor::all_positions);
      at::Tensor last = [&] {
        for (size_t r = 0; r < 4; ++r) cache.truncate_to(slots[r], pos[r]);
        return model->forward(step, cache, LogitsFor::last_position);
      }();
      for (size_t r = 0; r < 4; ++r) {
        CHECK(max_diff(out[r].narrow(0, 0, feed[r]), refs[r].narrow(0, pos[r], feed[r])) < kCachedTolerance);
        CHECK(max_diff(last[r], refs[r][pos[r] + feed[r] - 1]) < kCachedTolerance);
        CHECK(at::equal(out[r][feed[r] - 1], last[r]));  // a row's numbers do not depend on the others'
        pos[r] += feed[r];
        CHECK(cache.length(slots[r]) == pos[r]);
      }
    }
  }
}

TEST_CASE("truncating the cache and re-feeding gives the same logits as never having gone further") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 3);
  at::Tensor tokens = random_tokens(20, 97, 5);
  at::Tensor reference = full_logits(*model, tokens);
  KvCache cache(model->config(), 1, 32, KvCache::blocks_to_hold(1, 32));
  const int32_t slot = 0;
  model->forward({tokens.narrow(0, 0, 12).unsqueeze(0), {slot}, {12}}, cache, LogitsFor::last_position);
  // Write 5 wrong tokens past position 12 (like rejected drafts), then roll back.
  model->forward({at::full({1, 5}, 42, at::kLong), {slot}, {5}}, cache, LogitsFor::all_positions);
  cache.truncate_to(slot, 12);
  at::Tensor out =
      model->forward({tokens.narrow(0, 12, 8).unsqueeze(0), {slot}, {8}}, cache, LogitsFor::all_positions)[0];
  CHECK(max_diff(out, reference.narrow(0, 12, 8)) < kCachedTolerance);
  KvCache fresh(model->config(), 1, 32, KvCache::blocks_to_hold(1, 32));
  model->forward({tokens.narrow(0, 0, 12).unsqueeze(0), {slot}, {12}}, fresh, LogitsFor::last_position);
  CHECK(at::equal(
      out, model->forward({tokens.narrow(0, 12, 8).unsqueeze(0), {slot}, {8}}, fresh, LogitsFor::all_positions)[0]));
}

TEST_CASE("a forward past max_seq_len is an out_of_capacity error and leaves the cache unchanged") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 3);
  KvCache cache(model->config(), 1, 8, KvCache::blocks_to_hold(1, 8));
  const int32_t slot = 0;
  model->forward({at::ones({1, 6}, at::kLong), {slot}, {6}}, cache, LogitsFor::last_position);
  try {
    model->forward({at::ones({1, 3}, at::kLong), {slot}, {3}}, cache, LogitsFor::last_position);
    FAIL("expected an error");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::out_of_capacity);
  }
  CHECK(cache.length(slot) == 6);
}

TEST_CASE("the KV cache keeps a length per slot within max_seq_len, and its size in bytes") {
  KvCache cache(tiny_config(), 2, 16, KvCache::blocks_to_hold(2, 16));
  CHECK(cache.slot_count() == 2);
  cache.set_length(1, 9);
  CHECK(cache.length(0) == 0);
  CHECK(cache.length(1) == 9);
  cache.truncate_to(1, 4);
  CHECK(cache.length(1) == 4);
  CHECK_THROWS_AS(cache.truncate_to(1, 5), SpecdError);
  CHECK_THROWS_AS(cache.set_length(0, 17), SpecdError);
  CHECK(KvCache::bytes_per_token(tiny_config()) == 2 * 2 * 2 * 16 * 2);  // layers x {K,V} x kv*dim x bf16
  CHECK(cache.total_blocks() == 2);                                      // 2 slots of one 16-token block
  CHECK(cache.bytes() == 2 * 16 * KvCache::bytes_per_token(tiny_config()));
}

TEST_CASE("RoPE inverse frequencies follow theta, and llama3 scaling follows its formula") {
  ModelConfig c = tiny_config();
  c.head_dim = 128;
  c.rope_theta = 500000.0;
  at::Tensor plain = rope_inverse_frequencies(c);
  REQUIRE(plain.numel() == 64);
  CHECK(plain[0].item<double>() == doctest::Approx(1.0));
  CHECK(plain[1].item<double>() == doctest::Approx(std::pow(500000.0, -2.0 / 128)).epsilon(1e-6));
  c.rope_scaling = RopeScaling{"llama3", 32.0, 1.0, 4.0, 8192};
  at::Tensor scaled = rope_inverse_frequencies(c);
  for (int64_t i = 0; i < 64; ++i) {
    // Independent restatement of Llama 3's rule, per frequency.
    const double f = std::pow(500000.0, -2.0 * i / 128), wavelen = 2 * std::numbers::pi / f;
    double expected = f;
    if (wavelen > 8192.0 / 1.0) {
      expected = f / 32.0;
    } else if (wavelen >= 8192.0 / 4.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      expected = (1 - smooth) * f / 32.0 + smooth * f;
    }
    CAPTURE(i);
    CHECK(scaled[i].item<double>() == doctest::Approx(expected).epsilon(1e-6));
  }
  CHECK(scaled[63].item<double>() < plain[63].item<double>() / 31.0);           // longest wavelength divided by 32
  CHECK(scaled[0].item<double>() == doctest::Approx(plain[0].item<double>()));  // short ones kept
}

TEST_CASE("llama3 inverse frequencies of Llama 3.2 1B match the transformers formula") {
  // theta 500000, head_dim 64, factor 32, low 1, high 4, original 8192. Restated the way
  // transformers' _compute_llama3_parameters does it: smooth everything, then select.
  ModelConfig c = tiny_config();
  c.head_dim = 64;
  c.rope_theta = 500000.0;
  c.rope_scaling = RopeScaling{"llama3", 32.0, 1.0, 4.0, 8192};
  at::Tensor inv = rope_inverse_frequencies(c);
  REQUIRE(inv.numel() == 32);
  int kept = 0, divided = 0, smoothed = 0;
  for (int64_t i = 0; i < 32; ++i) {
    const double base = 1.0 / std::pow(500000.0, static_cast<double>(2 * i) / 64.0);
    const double wavelen = 2 * std::numbers::pi / base;
    const double low_wavelen = 8192.0 / 1.0, high_wavelen = 8192.0 / 4.0;
    const double scaled = wavelen > low_wavelen ? base / 32.0 : base;
    const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
    const double blended = (1 - smooth) * scaled / 32.0 + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    const double expected = medium ? blended : scaled;
    kept += !medium && wavelen < high_wavelen;
    divided += wavelen > low_wavelen;
    smoothed += medium;
    CAPTURE(i);
    CHECK(inv[i].item<double>() == doctest::Approx(expected).epsilon(1e-6));
  }
  CHECK(kept == 15);
  CHECK(divided == 14);
  CHECK(smoothed == 3);
  // Literal values (float64 evaluation of the formula) at the band edges.
  CHECK(inv[14].item<double>() == doctest::Approx(0.003211445994752591).epsilon(1e-6));
  CHECK(inv[15].item<double>() == doctest::Approx(0.001290547928209264).epsilon(1e-6));
  CHECK(inv[17].item<double>() == doctest::Approx(9.70828780262767e-05).epsilon(1e-6));
  CHECK(inv[18].item<double>() == doctest::Approx(1.9461638184831125e-05).epsilon(1e-6));
  CHECK(inv[31].item<double>() == doctest::Approx(9.41830672543491e-08).epsilon(1e-6));
}

TEST_CASE("packing the parameters for inference keeps their values and the full forward's logits") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 41);
  at::Tensor tokens = random_tokens(30, 97, 9).unsqueeze(0);
  at::Tensor before = model->forward_full(tokens);
  const at::Tensor k_before = model->named_parameters()["model.layers.1.self_attn.k_proj.weight"].clone();
  model->pack_parameters_for_inference();
  CHECK(at::equal(model->named_parameters()["model.layers.1.self_attn.k_proj.weight"], k_before));
  KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
  const int32_t slot = 0;
  at::Tensor cached = model->forward({tokens, {slot}, {30}}, cache, LogitsFor::all_positions);
  CHECK(max_diff(cached, before) < kCachedTolerance);
}

TEST_CASE("a profiled pass counts its parts and gives the same logits as an unprofiled one") {
  torch::InferenceMode guard;
  auto model = random_model(tiny_config(), 43);
  at::Tensor tokens = random_tokens(12, 97, 11).unsqueeze(0);
  KvCache cache(model->config(), 1, 64, KvCache::blocks_to_hold(1, 64));
  const int32_t slot = 0;
  const at::Tensor plain = model->forward({tokens, {slot}, {12}}, cache, LogitsFor::all_positions);
  CHECK(model->runner().profile().passes == 0);  // off by default
  cache.truncate_to(slot, 0);
  ForwardRunner& runner = model->runner();
  runner.set_profiling(true);
  const at::Tensor profiled = model->forward({tokens, {slot}, {12}}, cache, LogitsFor::all_positions);
  for (int64_t t = 0; t < 3; ++t) {
    model->forward({at::full({1, 1}, 5 + t, at::kLong), {slot}, {1}}, cache, LogitsFor::last_position);
  }
  runner.set_profiling(false);
  CHECK(at::equal(plain, profiled));
  const ForwardProfile p = runner.profile();
  CHECK(p.passes == 4);
  CHECK(p.linear > 0);
  CHECK(p.attention > 0);
  CHECK(p.linear + p.attention <= p.seconds);
  model->forward({at::full({1, 1}, 9, at::kLong), {slot}, {1}}, cache, LogitsFor::last_position);
  CHECK(runner.profile().passes == 4);  // off keeps the profile for reading
  runner.set_profiling(true);
  CHECK(runner.profile().passes == 0);  // on starts from zero
}
