// Speculation on quantized pairs: the committed pair loaded with int8 and int4 weights
// (--weights), greedy token for token equal to the quantized target's own greedy output,
// sampling matched to the quantized target's exact distribution; quantized checkpoints
// refused when their blocks are unreadable or would be quantized again.
#include "tests/support/doctest_torch.hpp"

#include <filesystem>
#include <map>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/safetensors.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/joint_distribution.hpp"
#include "tests/support/temp_dir.hpp"

using namespace specd;
using namespace specd::testing;

namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(SPECD_SOURCE_DIR) / "models";

struct QuantizedPair {
  std::shared_ptr<LlamaModel> target, draft;
};

QuantizedPair& pair(WeightFormat target, WeightFormat draft) {
  static std::map<std::pair<WeightFormat, WeightFormat>, QuantizedPair> pairs;
  QuantizedPair& p = pairs[{target, draft}];
  if (!p.target) p = {load_model(kModels / "target", target), load_model(kModels / "draft", draft)};
  return p;
}

const Tokenizer& tokenizer() {
  static auto tok = load_tokenizer(kModels / "target");
  return *tok;
}

const char* kPrompts[] = {
    "ROMEO:\nBut soft, what light",          "KING HENRY VI:\nO God",
    "First Citizen:\nWe are accounted",      "JULIET:\n",
    "MENENIUS:\nWhat work's, my countrymen", "DUKE VINCENTIO:\nBe absolute for death;",
    "GLOUCESTER:\nNow is the winter",        "HAMLET:\nTo be, or not to be",
    "ISABELLA:\nO, it is excellent",         "BRUTUS:\nThe people",
    "Nurse:\nNow, by my maidenhead,",        "TRANIO:\nI pray",
};

std::vector<int32_t> target_only(LlamaModel& target, const std::vector<int32_t>& prompt) {
  KvCache cache(target.config(), 1, 256, KvCache::blocks_to_hold(1, 256));
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 24;
  return generate_target_only(target, cache, r).tokens;
}

void check_greedy(WeightFormat target_format, WeightFormat draft_format, kernels::Dtype expected) {
  QuantizedPair& p = pair(target_format, draft_format);
  REQUIRE(p.target->inference_weights()->layers[0].gate_up.dtype() == expected);
  REQUIRE(p.target->inference_weights()->head().dtype() == expected);
  std::vector<std::vector<int32_t>> prompts, want;
  for (const char* text : kPrompts) {
    prompts.push_back(tokenizer().encode(text, true));
    want.push_back(target_only(*p.target, prompts.back()));
  }
  SpecStats totals;
  for (int32_t k : {2, 4}) {
    for (size_t batch : {size_t(1), size_t(6)}) {
      CAPTURE(k);
      CAPTURE(batch);
      KvCache tc(p.target->config(), 6, 256, KvCache::blocks_to_hold(6, 256)),
          dc(p.draft->config(), 6, 256, KvCache::blocks_to_hold(6, 256));
      SpecModels models{*p.target, tc, p.draft.get(), &dc};
      for (size_t first = 0; first < prompts.size(); first += batch) {
        std::vector<DriverRequest> reqs;
        for (size_t i = first; i < std::min(prompts.size(), first + batch); ++i) {
          DriverRequest r;
          r.prompt = prompts[i];
          r.max_tokens = 24;
          r.spec.k = k;
          reqs.push_back(r);
        }
        const auto results = generate_speculative(models, reqs, nullptr);
        for (size_t i = 0; i < results.size(); ++i) {
          CHECK(results[i].tokens == want[first + i]);
          totals.drafted += results[i].stats.drafted;
          totals.accepted += results[i].stats.accepted;
        }
      }
    }
  }
  MESSAGE(weight_format_name(target_format) << " target, " << weight_format_name(draft_format)
                                            << " draft: greedy acceptance " << totals.acceptance_rate());
  CHECK(totals.accepted > 0);
}

void check_sampled(WeightFormat format) {
  // Exact probabilities of the quantized target's first three tokens (top-k 3) against
  // N speculative samples with K = 2 on the quantized pair.
  QuantizedPair& p = pair(format, format);
  const std::vector<int32_t> prompt = tokenizer().encode("ROMEO:\n", true);
  SamplingParams sp;
  sp.temperature = 1.0;
  sp.top_k = 3;
  const auto exact = exact_joint3(*p.target, prompt, sp);
  REQUIRE(exact.size() == 27);
  KvCache tc(p.target->config(), 8, 64, KvCache::blocks_to_hold(8, 64)),
      dc(p.draft->config(), 8, 64, KvCache::blocks_to_hold(8, 64));
  SpecModels models{*p.target, tc, p.draft.get(), &dc};
  const int64_t n = 12000;
  const JointSample sample = sample_joint3(models, prompt, sp, n, 7000);
  int64_t outside = 0;
  const ChiSquare test = fit_joint3(exact, sample, n, outside);
  CHECK(outside == 0);
  MESSAGE(weight_format_name(format) << " pair: chi2 = " << test.statistic << " (dof " << test.dof << ", critical "
                                     << test.critical << "), sampled acceptance " << sample.stats.acceptance_rate());
  CHECK(test.dof >= 3);
  CHECK(test.passes());
  CHECK(sample.stats.accepted > 0);
}

// models/target's weights rewritten with one matrix as U8 blocks and the given metadata.
fs::path with_u8_tensor(const fs::path& dir, const std::string& name, const std::vector<int64_t>& shape,
                        const std::map<std::string, std::string>& metadata) {
  fs::create_directories(dir);
  for (const char* f : {"config.json", "tokenizer.model"}) {
    fs::copy_file(kModels / "target" / f, dir / f, fs::copy_options::overwrite_existing);
  }
  const SafetensorsFile source = SafetensorsFile::open(kModels / "target" / "model.safetensors");
  std::vector<TensorToWrite> tensors;
  std::vector<std::byte> blocks(static_cast<size_t>(shape[0] * shape[1]), std::byte{0});
  for (const std::string& n : source.names()) {
    const TensorView& t = source.tensor(n);
    if (n == name) {
      tensors.push_back({n, DType::U8, shape, blocks});
    } else {
      tensors.push_back({n, t.dtype, t.shape, {t.data, t.nbytes}});
    }
  }
  write_safetensors(dir / "model.safetensors", tensors, metadata);
  return dir;
}

SpecdError load_error(const fs::path& dir, WeightFormat weights = WeightFormat::stored) {
  try {
    load_model(dir, weights);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("load_model accepted a broken quantized checkpoint");
  return SpecdError(ErrorCode::internal, "");
}

}  // namespace

TEST_CASE("greedy speculation on the int8 pair equals the int8 target's own greedy output") {
  check_greedy(WeightFormat::int8, WeightFormat::int8, kernels::Dtype::q8_0);
}

TEST_CASE("greedy speculation on the int4 pair, and int4 target with the stored draft, equals int4 target-only") {
  check_greedy(WeightFormat::int4, WeightFormat::int4, kernels::Dtype::q4_0);
  check_greedy(WeightFormat::int4, WeightFormat::stored, kernels::Dtype::q4_0);
}

TEST_CASE("sampled speculation on the int8 pair has the int8 target's joint distribution (chi-square, p < 0.001)") {
  check_sampled(WeightFormat::int8);
}

TEST_CASE("sampled speculation on the int4 pair has the int4 target's joint distribution (chi-square, p < 0.001)") {
  check_sampled(WeightFormat::int4);
}

TEST_CASE("quantized checkpoints: blocks without a format, of the wrong shape, or quantized again are refused") {
  const TempDir dir;
  const fs::path& tmp = dir.path;
  const std::string q = "model.layers.0.self_attn.o_proj.weight";  // [384, 384]: 12 groups a row
  const std::string key = std::string(kBlockFormatKey) + q;
  {
    const SpecdError e = load_error(with_u8_tensor(tmp / "a", q, {384, 12 * 18}, {}));
    CHECK(e.code() == ErrorCode::unsupported_dtype);
    CHECK(std::string(e.what()).find(q + " is U8, and its " + key + " metadata is ''") != std::string::npos);
  }
  {
    const SpecdError e = load_error(with_u8_tensor(tmp / "b", q, {384, 12 * 34}, {{key, "q4_0"}}));
    CHECK(e.code() == ErrorCode::shape_mismatch);
    CHECK(std::string(e.what()).find("q4_0 blocks of [384, 384] need [384, 216]") != std::string::npos);
  }
  {
    const fs::path ok = with_u8_tensor(tmp / "c", q, {384, 12 * 18}, {{key, "q4_0"}});
    CHECK(load_model(ok)->inference_weights()->layers[0].o.dtype() == kernels::Dtype::q4_0);
    const SpecdError e = load_error(ok, WeightFormat::int8);
    CHECK(e.code() == ErrorCode::unsupported_dtype);
    CHECK(std::string(e.what()).find(q + " is stored as q4_0; quantizing it again to q8_0") != std::string::npos);
  }
}
