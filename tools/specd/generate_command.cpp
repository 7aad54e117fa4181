// `specd generate`: one request through the Engine (the server's actors and rounds),
// speculative by default on the default pair, or target-only (--no-spec, or a
// non-default target without a draft).
#include <cstdio>
#include <iostream>
#include <optional>

#include "actors/engine_runner.hpp"
#include "engine/base/errors.hpp"
#include "tools/specd/chat_messages.hpp"
#include "tools/specd/cli_common.hpp"
#include "tools/specd/pair_options.hpp"

namespace specd::cli {

namespace {

struct GenerateArgs {
  PairArgs pair;
  std::string prompt, prompt_ids, system, messages_file;
  bool chat = false;
  std::vector<std::string> stop;
  int32_t max_tokens = 64;
  SamplingParams sampling;
  bool json = false;
  bool ignore_eos = false;
};

boost::json::object spec_json(const SpecStats& s) {
  return {{"rounds", s.rounds},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"acceptance_rate", s.acceptance_rate()},
          {"alpha", s.alpha()},
          {"accepted_per_position", boost::json::array(s.accepted_per_position.begin(), s.accepted_per_position.end())},
          {"tokens_per_round", s.tokens_per_round()}};
}

// The request as given: a conversation (--chat: a messages file, or --system and
// --prompt), prompt ids, or prompt text. The engine tokenizes and validates it.
GenerateRequest make_request(const GenerateArgs& a, bool has_system, const SpecSettings& spec) {
  GenerateRequest request;
  if (!a.messages_file.empty())
    request.messages = read_messages_file(a.messages_file);
  else if (a.chat)
    request.messages = prompt_messages(a.system, has_system, a.prompt);
  else if (!a.prompt_ids.empty())
    request.prompt_ids = parse_id_list(a.prompt_ids);
  else
    request.prompt = a.prompt;
  request.sampling = a.sampling;
  request.max_tokens = a.max_tokens;
  request.stop = a.stop;
  request.spec = spec;
  request.ignore_eos = a.ignore_eos;
  return request;
}

void run_generate(const GenerateArgs& a, bool has_system) {
  const PairChoice pair = choose_pair(a.pair);
  // The messages file is read before the models load, so a bad one fails at once.
  GenerateRequest request = make_request(a, has_system, pair.spec);
  EngineRunner runner(pair.engine);
  const GenerateResult r = runner.generate(request);

  // Prefill: admission to the first burst; decode: the first burst to the end.
  const double prefill_seconds = (r.timings.first_token_ms - r.timings.queued_ms) / 1e3;
  const double decode_seconds = (r.timings.total_ms - r.timings.first_token_ms) / 1e3;
  const double total = prefill_seconds + decode_seconds;
  const auto n = static_cast<double>(r.token_ids.size());
  const double tokens_per_second = total > 0 ? n / total : 0;
  const double decode_tps = decode_seconds > 0 && n > 1 ? (n - 1) / decode_seconds : 0;
  const std::string mode = mode_description(pair.spec);
  if (a.json) {
    boost::json::object out{{"text", r.text},
                            {"token_ids", boost::json::array(r.token_ids.begin(), r.token_ids.end())},
                            {"prompt_tokens", r.usage.prompt_tokens},
                            {"completion_tokens", r.usage.completion_tokens},
                            {"tokens_per_second", tokens_per_second},
                            {"decode_tokens_per_second", decode_tps},
                            {"prefill_ms", prefill_seconds * 1e3},
                            {"decode_ms", decode_seconds * 1e3},
                            {"finish_reason", finish_reason_name(r.finish_reason)},
                            {"mode", mode},
                            {"threads", threads_json(runner.engine().thread_policy())}};
    if (request.spec.enabled) out["spec"] = spec_json(r.spec);
    print_json(out);
    return;
  }
  std::cout << r.text << "\n";
  std::fprintf(stderr,
               "[%s; %d prompt tokens, %zu generated in %.3f s: %.1f tokens/s (decode %.1f tokens/s), finish %s",
               mode.c_str(), r.usage.prompt_tokens, r.token_ids.size(), total, tokens_per_second, decode_tps,
               finish_reason_name(r.finish_reason));
  if (request.spec.enabled) {
    std::fprintf(stderr, "; acceptance %.1f%%, %.2f tokens/round", 100 * r.spec.acceptance_rate(),
                 r.spec.tokens_per_round());
  }
  std::fprintf(stderr, "]\n");
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt (speculative on the default pair)");
  add_pair_options(*cmd, args->pair);
  auto* prompt = cmd->add_option("--prompt", args->prompt, "prompt text (BOS is prepended)");
  auto* ids = cmd->add_option("--prompt-ids", args->prompt_ids, "prompt as token ids, e.g. 1,2,3");
  prompt->excludes(ids);
  auto* chat = cmd->add_flag("--chat", args->chat,
                             "render the prompt with the model's chat template (--prompt is the user message)");
  auto* system = cmd->add_option("--system", args->system, "system message (with --chat)");
  auto* messages = cmd->add_option("--messages", args->messages_file, "OpenAI-style messages JSON file (with --chat)");
  system->needs(chat)->excludes(messages);
  messages->needs(chat)->excludes(prompt)->excludes(ids);
  chat->excludes(ids);
  cmd->add_option("--max-tokens", args->max_tokens, "tokens to generate at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--stop", args->stop, "stop string (repeatable); the text ends before it");
  cmd->add_option("--temperature", args->sampling.temperature, "0 is greedy")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", args->sampling.top_k, "keep the k most likely tokens (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", args->sampling.top_p, "nucleus mass in (0, 1]")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 1.0));
  cmd->add_option("--repetition-penalty", args->sampling.repetition_penalty, "CTRL-style penalty (1: off)")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 100.0));
  cmd->add_option("--seed", args->sampling.seed, "sampling seed")->capture_default_str();
  cmd->add_flag("--ignore-eos", args->ignore_eos, "keep generating past EOS (benchmarks: always max-tokens)");
  cmd->add_flag("--json", args->json, "print one JSON object");
  // K as the wire chooses it: `auto` unless named, except for a sample, which keeps a
  // fixed K so that its seed gives the same text twice (a sampled round's draws follow K).
  auto* k = cmd->get_option("--k");
  k->default_str("auto (4 when sampling)");
  cmd->callback([args, prompt, ids, messages, system, k] {
    if (prompt->count() + ids->count() + messages->count() == 0) {
      throw CLI::RequiredError("--prompt, --prompt-ids or --messages");
    }
    if (k->count() == 0 && args->sampling.temperature == 0) args->pair.k = "auto";
    run_generate(*args, system->count() > 0);
  });
}

}  // namespace specd::cli
