// `specd perplexity`: what a model (and its weight format) predicts of a held-out text,
// so a user sees what quantization costs before serving it.
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"
#include "tools/specd/pair_options.hpp"

namespace specd::cli {

namespace {

struct PerplexityArgs {
  std::string model, weights = "stored", text_file;
  double last_fraction = 1.0;
  int64_t context = 512;
  int threads = 0;
  bool json = false;
};

std::string read_tail(const std::string& path, double fraction) {
  const std::string text = read_whole_file(path, "--text");
  size_t start = text.size() - static_cast<size_t>(static_cast<double>(text.size()) * fraction);
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;  // whole UTF-8
  return text.substr(start);
}

// The text's tokens in windows of `context` - 1, each after BOS, every token scored
// from the window before it (llama.cpp's perplexity scores only each window's second
// half; scoring all keeps short texts meaningful, and the same rule holds for every
// weight format compared).
void run_perplexity(const PerplexityArgs& a) {
  apply_cli_thread_policy(a.threads);
  const std::filesystem::path dir = a.model.empty() ? default_target_dir() : std::filesystem::path(a.model);
  const WeightFormat weights = weight_format_of(a.weights);
  const std::string text = read_tail(a.text_file, a.last_fraction);
  auto tokenizer = load_tokenizer(dir);
  LoadInfo load;
  auto model = load_model(dir, weights, &load);
  const ModelConfig& config = model->config();
  const int64_t context = std::min<int64_t>(a.context, config.max_position_embeddings);
  const std::optional<int32_t> bos = tokenizer->bos_id();
  if (!bos) throw SpecdError(ErrorCode::bad_value, dir.string() + ": the tokenizer has no BOS to start windows with");
  const std::vector<int32_t> ids = tokenizer->encode(text, false);
  if (ids.empty()) throw SpecdError(ErrorCode::bad_value, "--text " + a.text_file + " holds no tokens");

  torch::InferenceMode guard;
  KvCache cache(config, 1, context, KvCache::blocks_to_hold(1, context));
  const auto t0 = std::chrono::steady_clock::now();
  double nll = 0;
  int64_t scored = 0;
  for (size_t begin = 0; begin < ids.size(); begin += static_cast<size_t>(context - 1)) {
    const size_t end = std::min(ids.size(), begin + static_cast<size_t>(context - 1));
    std::vector<int64_t> window{*bos};
    window.insert(window.end(), ids.begin() + static_cast<ptrdiff_t>(begin), ids.begin() + static_cast<ptrdiff_t>(end));
    const int64_t n = static_cast<int64_t>(window.size());
    cache.truncate_to(0, 0);
    const at::Tensor tokens = at::tensor(window, at::kLong).view({1, n});
    const at::Tensor logp = at::log_softmax(model->forward({tokens, {0}, {n}}, cache, LogitsFor::all_positions)[0], -1);
    const auto next = tokens[0].slice(0, 1).unsqueeze(1);
    nll -= logp.slice(0, 0, n - 1).gather(1, next).to(at::kDouble).sum().item<double>();
    scored += n - 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ppl = std::exp(nll / static_cast<double>(scored));
  if (a.json) {
    print_json({{"model", dir.string()},
                {"weights", weight_format_name(weights)},
                {"packed_gb", static_cast<double>(model->inference_weights()->bytes()) / 1e9},
                {"text", a.text_file},
                {"last_fraction", a.last_fraction},
                {"context", context},
                {"tokens", scored},
                {"mean_nll", nll / static_cast<double>(scored)},
                {"perplexity", ppl},
                {"load_seconds", load.seconds},
                {"seconds", seconds}});
    return;
  }
  std::printf("%s (%s weights): perplexity %.4f over %lld tokens (context %lld), %.1f s\n", dir.c_str(),
              weight_format_name(weights), ppl, static_cast<long long>(scored), static_cast<long long>(context),
              seconds);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text, to see what quantization costs");
  cmd->add_option("--model", args->model, "model directory (default: the committed target)");
  cmd->add_option("--weights", args->weights, "stored, or int8 / int4 quantized at load")
      ->capture_default_str()
      ->check(CLI::IsMember({"stored", "int8", "int4"}));
  cmd->add_option("--text", args->text_file, "UTF-8 text file")->required();
  cmd->add_option("--last-fraction", args->last_fraction, "score only this last part of the file (0.1: the last 10%)")
      ->capture_default_str()
      ->check(CLI::Range(0.0001, 1.0));
  cmd->add_option("--context", args->context, "tokens a window holds, BOS included (capped at the model's positions)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--threads", args->threads, "compute threads (0: the CPUs this process may use)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_perplexity(*args); });
}

}  // namespace specd::cli
