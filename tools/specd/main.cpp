// specd: the command-line entry point (generate, tokenize, detokenize, bench, serve, quantize, perplexity,
// chat-template).
#include <cstdio>
#include <exception>

#include "compute/thread_policy.hpp"
#include "engine/base/errors.hpp"
#include "engine/kernels/linear.hpp"
#include "tools/specd/cli_common.hpp"

int main(int argc, char** argv) {
  specd::ensure_quiet_thread_pools_env(argv);
  CLI::App app{"specd: a speculative-decoding inference engine"};
  app.require_subcommand(1);
  specd::cli::add_generate_command(app);
  specd::cli::add_tokenize_commands(app);
  specd::cli::add_bench_command(app);
  specd::cli::add_serve_command(app);
  specd::cli::add_quantize_command(app);
  specd::cli::add_perplexity_command(app);
  specd::cli::add_chat_template_command(app);
  try {
    try {
      specd::kernels::best_isa();  // SPECD_KERNEL_ISA's refusal at start, not at the first layer
    } catch (const std::invalid_argument& e) {
      throw specd::SpecdError(specd::ErrorCode::bad_value, e.what());
    }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const specd::SpecdError& e) {
    std::fprintf(stderr, "specd: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
