#pragma once
// Pieces shared by the specd subcommands: where the default models live, option
// parsing helpers, JSON output.
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <charconv>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace specd::cli {

// The committed default pair: $SPECD_MODELS_DIR, else models/ of specd's data directory.
std::filesystem::path default_models_dir();
std::filesystem::path default_target_dir();

// "1,2,3" -> ids; throws CLI::ValidationError on anything else.
std::vector<int32_t> parse_id_list(const std::string& text);

void print_json(const boost::json::value& value);

// The median of a benchmark's samples (the mean of the middle two for an even count; 0
// for none).
double median(std::vector<double> values);

// Each subcommand registers its options and a callback that runs it.
void add_generate_command(CLI::App& app);
void add_tokenize_commands(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);

}  // namespace specd::cli
