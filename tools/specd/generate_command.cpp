// `specd generate`: target-only generation from a prompt, printing the text and speed.
#include <ATen/Parallel.h>

#include <cstdio>
#include <iostream>

#include "engine/checkpoint.hpp"
#include "engine/errors.hpp"
#include "engine/generation.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_model.hpp"
#include "engine/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_ids;
  int32_t max_tokens = 64;
  SamplingParams sampling;
  int64_t max_seq_len = 1024;
  int threads = 0;
  bool json = false;
};

void run_generate(const GenerateArgs& a) {
  validate(a.sampling);
  if (a.threads > 0) at::set_num_threads(a.threads);
  const std::filesystem::path dir = a.model.empty() ? default_target_dir() : std::filesystem::path(a.model);
  auto tokenizer = load_tokenizer(dir);
  auto model = load_model(dir);
  if (tokenizer->vocab_size() > model->config().vocab_size) {
    throw SpecdError(ErrorCode::bad_value, dir.string() + ": tokenizer vocabulary (" +
                                               std::to_string(tokenizer->vocab_size()) + ") exceeds the model's (" +
                                               std::to_string(model->config().vocab_size) + ")");
  }
  GenerationRequest request;
  request.prompt = a.prompt_ids.empty() ? tokenizer->encode(a.prompt, true) : parse_id_list(a.prompt_ids);
  for (int32_t id : request.prompt) {
    if (id >= model->config().vocab_size) {
      throw SpecdError(ErrorCode::invalid_argument, "prompt id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  request.sampling = a.sampling;
  request.max_tokens = a.max_tokens;
  request.eos_ids = tokenizer->eos_ids();
  const int64_t max_seq = std::min<int64_t>(a.max_seq_len, model->config().max_position_embeddings);
  KvCache cache(model->config(), 1, max_seq);
  GenerationResult result = generate_target_only(*model, cache, request);

  const std::string text = tokenizer->decode(result.tokens);
  const double total = result.prefill_seconds + result.decode_seconds;
  const auto n = static_cast<double>(result.tokens.size());
  const double tokens_per_second = total > 0 ? n / total : 0;
  const double decode_tps = result.decode_seconds > 0 && n > 1 ? (n - 1) / result.decode_seconds : 0;
  if (a.json) {
    print_json(boost::json::object{
        {"text", text},
        {"token_ids", boost::json::array(result.tokens.begin(), result.tokens.end())},
        {"prompt_tokens", request.prompt.size()},
        {"completion_tokens", result.tokens.size()},
        {"tokens_per_second", tokens_per_second},
        {"decode_tokens_per_second", decode_tps},
        {"prefill_ms", result.prefill_seconds * 1e3},
        {"decode_ms", result.decode_seconds * 1e3},
        {"finish_reason", finish_reason_name(result.finish_reason)}});
    return;
  }
  std::cout << text << "\n";
  std::fprintf(stderr, "[%zu prompt tokens, %zu generated in %.3f s: %.1f tokens/s (decode %.1f tokens/s), finish %s]\n",
               request.prompt.size(), result.tokens.size(), total, tokens_per_second, decode_tps,
               finish_reason_name(result.finish_reason));
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt (target model only)");
  cmd->add_option("--model", args->model, "model directory (default: the committed target)");
  auto* prompt = cmd->add_option("--prompt", args->prompt, "prompt text (BOS is prepended)");
  auto* ids = cmd->add_option("--prompt-ids", args->prompt_ids, "prompt as token ids, e.g. 1,2,3");
  prompt->excludes(ids);
  cmd->add_option("--max-tokens", args->max_tokens, "tokens to generate at most")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--temperature", args->sampling.temperature, "0 is greedy")
      ->capture_default_str()->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", args->sampling.top_k, "keep the k most likely tokens (0: all)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", args->sampling.top_p, "nucleus mass in (0, 1]")
      ->capture_default_str()->check(CLI::Range(1e-9, 1.0));
  cmd->add_option("--repetition-penalty", args->sampling.repetition_penalty, "CTRL-style penalty (1: off)")
      ->capture_default_str()->check(CLI::Range(1e-3, 100.0));
  cmd->add_option("--seed", args->sampling.seed, "sampling seed")->capture_default_str();
  cmd->add_option("--max-seq-len", args->max_seq_len, "KV cache length")
      ->capture_default_str()->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--threads", args->threads, "intra-op threads (0: libtorch default)")
      ->capture_default_str()->check(CLI::Range(0, 256));
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args, prompt, ids] {
    if (prompt->count() + ids->count() == 0) throw CLI::RequiredError("--prompt or --prompt-ids");
    run_generate(*args);
  });
}

}  // namespace specd::cli
