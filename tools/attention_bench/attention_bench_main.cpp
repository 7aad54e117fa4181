// specd_attention_bench: `specd bench --kernels --attention` without libtorch, so that
// valgrind can run it (libtorch pulls in libraries whose start-up code uses instructions
// valgrind 3.19 does not decode). Same options and output.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "tools/specd/bench_attention.hpp"

int main(int argc, char** argv) {
  CLI::App app{"The attention kernels at Llama-3.2-3B shapes (specd bench --kernels --attention)"};
  specd::cli::KernelBenchArgs args;
  bool json = false;
  app.add_flag("--json", json, "print one JSON object");
  app.add_option("--samples", args.samples, "timed samples per figure (median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  specd::cli::add_attention_bench_options(app, args);
  CLI11_PARSE(app, argc, argv);
  try {
    specd::cli::run_attention_bench(args, json);
  } catch (const std::exception& e) {
    std::cerr << "specd_attention_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
