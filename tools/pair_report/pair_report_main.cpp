// specd_pair_report: measures a draft/target pair on this machine. Prints JSON with
// each model's single-sequence decode ms/token, their ratio c, and the greedy
// acceptance of K-token draft proposals (speculative greedy, one request) on
// held-out prompts taken from the end of the corpus.
#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <torch/csrc/autograd/grad_mode.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/checkpoint.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_model.hpp"
#include "engine/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace specd;

namespace {

struct Args {
  std::string target = "models/target", draft = "models/draft";
  std::string corpus = "../shared/data/tinyshakespeare.txt";
  double heldout_fraction = 0.1;
  int prompts = 60, prompt_tokens = 24, new_tokens = 64, k = 4, timing_tokens = 128, threads = 2;
};

int32_t greedy_next(LlamaModel& m, KvCache& cache, int32_t slot, const std::vector<int32_t>& ids) {
  ForwardBatch b{at::tensor(ids, at::kInt).to(at::kLong).unsqueeze(0), {slot}, {static_cast<int64_t>(ids.size())}};
  return static_cast<int32_t>(m.forward(b, cache, LogitsFor::last_position)[0].argmax().item<int64_t>());
}

// Median-free simple figure: mean ms per single-token decode step after a short prompt.
double decode_ms_per_token(LlamaModel& m, int tokens) {
  KvCache cache(m.config(), 1, tokens + 16);
  const int32_t slot = *cache.allocate();
  int32_t next = greedy_next(m, cache, slot, {1, 100, 200, 300});
  for (int i = 0; i < 8; ++i) next = greedy_next(m, cache, slot, {next});  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < tokens; ++i) next = greedy_next(m, cache, slot, {next});
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / tokens;
}

struct Acceptance {
  int64_t drafted = 0, accepted = 0, rounds = 0, emitted = 0;
};

// Speculative greedy for one prompt: both caches hold the context up to, not
// including, the last sampled token g (DESIGN.md, "The speculative round").
void speculate(LlamaModel& target, LlamaModel& draft, const std::vector<int32_t>& prompt, int k, int new_tokens,
               Acceptance& acc) {
  const int64_t cap = static_cast<int64_t>(prompt.size()) + new_tokens + k + 2;
  KvCache tc(target.config(), 1, cap), dc(draft.config(), 1, cap);
  const int32_t ts = *tc.allocate(), ds = *dc.allocate();
  std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
  target.forward({at::tensor(head, at::kInt).to(at::kLong).unsqueeze(0), {ts}, {static_cast<int64_t>(head.size())}}, tc,
                 LogitsFor::last_position);
  draft.forward({at::tensor(head, at::kInt).to(at::kLong).unsqueeze(0), {ds}, {static_cast<int64_t>(head.size())}}, dc,
                LogitsFor::last_position);
  std::vector<int32_t> pending = {prompt.back()};  // tokens the draft has not seen yet; ends with g
  int32_t g = prompt.back();
  int produced = 0;
  while (produced < new_tokens) {
    const int64_t start = tc.length(ts);
    std::vector<int32_t> proposal;
    int32_t t = greedy_next(draft, dc, ds, pending);
    for (int i = 0; i < k; ++i) {
      proposal.push_back(t);
      if (i + 1 < k) t = greedy_next(draft, dc, ds, {t});
    }
    std::vector<int32_t> verify = {g};
    verify.insert(verify.end(), proposal.begin(), proposal.end());
    at::Tensor logits = target.forward({at::tensor(verify, at::kInt).to(at::kLong).unsqueeze(0), {ts}, {k + 1}}, tc,
                                       LogitsFor::all_positions)[0];
    at::Tensor choice = logits.argmax(-1);
    int n = 0;
    while (n < k && choice[n].item<int64_t>() == proposal[n]) ++n;
    const auto extra = static_cast<int32_t>(choice[n].item<int64_t>());
    acc.drafted += k;
    acc.accepted += n;
    acc.rounds += 1;
    acc.emitted += n + 1;
    produced += n + 1;
    tc.truncate_to(ts, start + n + 1);
    dc.truncate_to(ds, std::min(dc.length(ds), start + n + 1));
    // The draft saw g and t1..t(k-1); what it has not seen of the accepted text comes next.
    pending.assign(proposal.begin() + (dc.length(ds) - start - 1), proposal.begin() + n);
    pending.push_back(extra);
    g = extra;
  }
}

std::vector<std::vector<int32_t>> heldout_prompts(const Args& a, const Tokenizer& tok) {
  std::ifstream in(a.corpus, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read corpus " + a.corpus);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
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
    at::set_num_threads(a.threads);
    torch::InferenceMode guard;
    auto target = load_model(a.target), draft = load_model(a.draft);
    auto tok = load_tokenizer(a.target);
    const double target_ms = decode_ms_per_token(*target, a.timing_tokens);
    const double draft_ms = decode_ms_per_token(*draft, a.timing_tokens);
    Acceptance acc;
    const auto prompts = heldout_prompts(a, *tok);
    for (const auto& p : prompts) speculate(*target, *draft, p, a.k, a.new_tokens, acc);
    std::printf(
        "{\"target_parameters\": %lld, \"draft_parameters\": %lld, \"threads\": %d, \"target_decode_ms\": %.3f, "
        "\"draft_decode_ms\": %.3f, \"c\": %.4f, \"k\": %d, \"prompts\": %zu, \"rounds\": %lld, \"drafted\": %lld, "
        "\"accepted\": %lld, \"greedy_acceptance\": %.4f, \"tokens_per_round\": %.3f}\n",
        static_cast<long long>(target->parameter_count()), static_cast<long long>(draft->parameter_count()), a.threads,
        target_ms, draft_ms, draft_ms / target_ms, a.k, prompts.size(), static_cast<long long>(acc.rounds),
        static_cast<long long>(acc.drafted), static_cast<long long>(acc.accepted),
        static_cast<double>(acc.accepted) / static_cast<double>(acc.drafted),
        static_cast<double>(acc.emitted) / static_cast<double>(acc.rounds));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_pair_report: %s\n", e.what());
    return 1;
  }
  return 0;
}
