// specd_pair_report: measures a draft/target pair on this machine. Prints JSON with
// each model's single-sequence decode ms/token, their ratio c, and the greedy
// acceptance of K-token draft proposals (speculative greedy through the Engine, one
// request at a time) on held-out prompts taken from the end of the corpus.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "actors/engine_runner.hpp"
#include "compute/compute_threads.hpp"
#include "engine/base/text_file.hpp"
#include "engine/model/cost_probe.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"

namespace fs = std::filesystem;
using namespace specd;

namespace {

struct Args {
  std::string target = "models/target", draft = "models/draft";
  std::string corpus = "../shared/data/tinyshakespeare.txt";
  double heldout_fraction = 0.1;
  int prompts = 60, prompt_tokens = 24, new_tokens = 64, k = 4, timing_tokens = 128, threads = 2;
};

std::vector<std::vector<int32_t>> heldout_prompts(const Args& a, const Tokenizer& tok) {
  const std::string text = specd::read_whole_file(a.corpus, "corpus");
  size_t pos = text.rfind("\n\n", static_cast<size_t>(text.size() * (1 - a.heldout_fraction))) + 2;
  std::vector<std::vector<int32_t>> prompts;
  while (pos < text.size() && static_cast<int>(prompts.size()) < a.prompts) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) end = text.size();
    auto ids = tok.encode(text.substr(pos, end - pos), true);
    if (static_cast<int>(ids.size()) > a.prompt_tokens) {
      ids.resize(a.prompt_tokens);
      prompts.push_back(ids);
    }
    pos = end + 2;
  }
  return prompts;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"Measure a draft/target pair: decode cost ratio c and greedy acceptance"};
  app.add_option("--target", a.target)->capture_default_str();
  app.add_option("--draft", a.draft)->capture_default_str();
  app.add_option("--corpus", a.corpus)->capture_default_str();
  app.add_option("--prompts", a.prompts)->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--prompt-tokens", a.prompt_tokens)->capture_default_str()->check(CLI::Range(2, 4096));
  app.add_option("--new-tokens", a.new_tokens)->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--k", a.k)->capture_default_str()->check(CLI::Range(1, 16));
  app.add_option("--threads", a.threads)->capture_default_str()->check(CLI::Range(1, 256));
  CLI11_PARSE(app, argc, argv);
  try {
    torch::InferenceMode guard;
    int64_t target_parameters = 0, draft_parameters = 0;
    double target_ms = 0, draft_ms = 0;
    {
      ComputeThreadScope threads(a.threads);  // the step timings on a.threads kernel threads
      auto target = load_model(a.target), draft = load_model(a.draft);
      target_ms = 1e3 * measure_decode_step_seconds(*target, a.timing_tokens);
      draft_ms = 1e3 * measure_decode_step_seconds(*draft, a.timing_tokens);
      target_parameters = target->parameter_count();
      draft_parameters = draft->parameter_count();
    }
    EngineConfig config;
    config.target_dir = a.target;
    config.draft_dir = a.draft;
    config.max_batch = 1;
    config.sequence.max_seq_len = a.prompt_tokens + a.new_tokens + 1;
    config.threads = a.threads;
    config.sequence.k_max = std::max(config.sequence.k_max, a.k);
    config.calibration_seconds = 0;  // fixed K
    EngineRunner runner(config);
    const auto prompts = heldout_prompts(a, *runner.engine().tokenizer());
    // One request at a time: the single-sequence figure, as the issue asks.
    SpecStats acc;
    for (const auto& p : prompts) {
      GenerateRequest r;
      r.prompt_ids = p;
      r.max_tokens = a.new_tokens;
      r.spec.k = a.k;
      acc.add(runner.generate(std::move(r)).spec);
    }
    std::puts(serialize_json(boost::json::object{{"target_parameters", target_parameters},
                                                 {"draft_parameters", draft_parameters},
                                                 {"threads", a.threads},
                                                 {"target_decode_ms", round_to(target_ms, 3)},
                                                 {"draft_decode_ms", round_to(draft_ms, 3)},
                                                 {"c", round_to(draft_ms / target_ms, 4)},
                                                 {"k", a.k},
                                                 {"prompts", prompts.size()},
                                                 {"rounds", acc.rounds},
                                                 {"drafted", acc.drafted},
                                                 {"accepted", acc.accepted},
                                                 {"rejections", acc.rejections},
                                                 {"acceptance_rate", round_to(acc.acceptance_rate(), 4)},
                                                 {"alpha", round_to(acc.alpha(), 4)},
                                                 {"tokens_per_round", round_to(acc.tokens_per_round(), 3)}})
                  .c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_pair_report: %s\n", e.what());
    return 1;
  }
  return 0;
}
