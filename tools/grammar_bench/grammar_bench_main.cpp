// specd_grammar_bench: what a JSON-schema constraint costs per token at a real
// vocabulary. For each schema (small, medium, large: tools/grammar_bench/*.schema.json)
// it prints, as JSON, the compile time (schema to automaton), the precompute time (the
// per-state token table), and the time of fill_mask at every position of a valid
// document tokenized with the Llama 3 tokenizer (median, p90, p99, max), walking the
// document REPEAT times; then the same for response_format json_object (any JSON object)
// over the large document. Wall-clock figures include preemption by other processes on a
// loaded host; the cpu_ figures are the thread's own CPU time per call, which does not.
// Usage: specd_grammar_bench [--tokenizer tokenizer.json] [--dir DIR] [--repeat N]
#include <boost/json.hpp>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/grammar/grammar_cache.hpp"
#include "engine/grammar/grammar_matcher.hpp"
#include "engine/grammar/json_schema_compiler.hpp"
#include "engine/tokenizer/bpe_tokenizer.hpp"
#include "json/json_serialize.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace g = specd::grammar;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

json::object summary_us(const std::vector<double>& seconds) {
  std::vector<double> us;
  for (const double s : seconds) us.push_back(s * 1e6);
  double sum = 0;
  for (const double u : us) sum += u;
  return {{"median", percentile(us, 0.5)},
          {"p90", percentile(us, 0.9)},
          {"p99", percentile(us, 0.99)},
          {"max", percentile(us, 1.0)},
          {"mean", sum / static_cast<double>(us.size())}};
}

json::object run_schema(const std::string& name, const fs::path& dir, const specd::BpeTokenizer& tokenizer,
                        const std::shared_ptr<const g::TokenVocabulary>& vocab, int repeat) {
  // "json_object" is response_format json_object (any object) over the large document.
  const bool any_object = name == "json_object";
  const std::string schema = any_object ? "" : specd::read_whole_file(dir / (name + ".schema.json"), "schema");
  const std::string document =
      specd::read_whole_file(dir / ((any_object ? "large" : name) + ".document.json"), "document");
  const double t0 = now_seconds();
  auto grammar = std::make_shared<const g::ByteGrammar>(any_object ? g::any_json_object_grammar()
                                                                   : g::compile_json_schema(schema));
  const double compile_seconds = now_seconds() - t0;
  const auto compiled = std::make_shared<const g::CompiledGrammar>(grammar, vocab);
  const std::vector<int32_t> ids = tokenizer.encode(document, false);

  std::vector<double> wall, cpu, accept;
  std::vector<double> allowed;
  size_t forced_positions = 0;
  size_t one_token_positions = 0;
  g::TokenBitset mask;
  for (int r = 0; r < repeat; ++r) {
    g::GrammarMatcher m(compiled);
    for (size_t i = 0; i <= ids.size(); ++i) {
      const double c0 = thread_cpu_seconds();
      const double w0 = now_seconds();
      m.fill_mask(mask);
      const double w1 = now_seconds();
      const double c1 = thread_cpu_seconds();
      wall.push_back(w1 - w0);
      cpu.push_back(c1 - c0);
      if (r == 0) {
        allowed.push_back(static_cast<double>(mask.count()));
        if (mask.count() == 1) ++one_token_positions;
        if (!m.forced_bytes(1).empty()) ++forced_positions;
      }
      const int32_t next = i < ids.size() ? ids[i] : vocab->eos_ids().front();
      if (!mask.test(next)) {
        throw specd::SpecdError(specd::ErrorCode::internal, name + ": the mask forbids token " + std::to_string(i) +
                                                                " of the document (id " + std::to_string(next) + ")");
      }
      const double a0 = now_seconds();
      if (!m.accept_token(next)) throw specd::SpecdError(specd::ErrorCode::internal, name + ": token refused");
      accept.push_back(now_seconds() - a0);
    }
  }
  return {{"name", name},
          {"schema_bytes", schema.size()},
          {"compiled_bytes", compiled->bytes()},  // what it weighs in the grammar cache ([engine] grammar_cache_memory)
          {"document_bytes", document.size()},
          {"document_tokens", ids.size()},
          {"masks_timed", wall.size()},
          {"automaton_nodes", grammar->nodes.size()},
          {"precomputed_states", compiled->masks.node_count()},
          {"uncertain_tokens_stored", compiled->masks.uncertain_total()},
          {"compile_ms", compile_seconds * 1e3},
          {"precompute_ms", compiled->precompute_seconds * 1e3},
          {"mask_us", summary_us(wall)},
          {"mask_cpu_us", summary_us(cpu)},
          {"accept_token_us", summary_us(accept)},
          {"allowed_tokens_median", percentile(allowed, 0.5)},
          {"positions_with_a_forced_byte", forced_positions},
          {"positions_with_one_allowed_token", one_token_positions}};
}

}  // namespace

int main(int argc, char** argv) {
  fs::path tokenizer_json = fs::path(SPECD_LLAMA3_TOKENIZER_DIR) / "tokenizer.json";
  fs::path dir = fs::path(SPECD_SOURCE_DIR) / "tools/grammar_bench";
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--tokenizer" && i + 1 < argc) {
      tokenizer_json = argv[++i];
    } else if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: specd_grammar_bench [--tokenizer tokenizer.json] [--dir DIR] [--repeat N]\n");
      return 2;
    }
  }
  try {
    if (!fs::exists(tokenizer_json)) {
      throw specd::SpecdError(specd::ErrorCode::missing_file,
                              tokenizer_json.string() + ": run scripts/fetch_llama3_tokenizer.sh");
    }
    const specd::BpeTokenizer tokenizer(tokenizer_json);
    const double v0 = now_seconds();
    const auto vocab = std::make_shared<const g::TokenVocabulary>(
        g::vocabulary_from_tokenizer(tokenizer, g::special_ids_from_tokenizer_json(tokenizer_json)));
    const double vocabulary_seconds = now_seconds() - v0;
    json::array results;
    for (const char* name : {"small", "medium", "large", "json_object"})
      results.push_back(run_schema(name, dir, tokenizer, vocab, repeat));
    const json::object out{{"tokenizer", tokenizer_json.string()},
                           {"vocab_size", vocab->size()},
                           {"vocabulary_ms", vocabulary_seconds * 1e3},
                           {"repeat", repeat},
                           {"schemas", std::move(results)}};
    std::printf("%s\n", specd::serialize_json(out).c_str());
  } catch (const specd::SpecdError& e) {
    std::fprintf(stderr, "specd_grammar_bench: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
