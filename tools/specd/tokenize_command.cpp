// `specd tokenize` and `specd detokenize`: need only the tokenizer files of a model dir.
#include <iostream>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tools/specd/cli_common.hpp"

namespace specd::cli {

namespace {

struct TokenizeArgs {
  std::string model, text, text_file;
  bool json = false;
};

struct DetokenizeArgs {
  std::string model, ids;
};

void run_tokenize(const TokenizeArgs& a) {
  auto tok = load_tokenizer(a.model.empty() ? default_target_dir() : std::filesystem::path(a.model));
  const std::string text = a.text_file.empty() ? a.text : read_whole_file(a.text_file, "--text-file");
  const auto ids = tok->encode(text, false);
  if (a.json) {
    boost::json::array arr(ids.begin(), ids.end());
    print_json(boost::json::object{{"ids", arr}});
    return;
  }
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? "," : "") << ids[i];
  std::cout << "\n";
}

void run_detokenize(const DetokenizeArgs& a) {
  auto tok = load_tokenizer(a.model.empty() ? default_target_dir() : std::filesystem::path(a.model));
  const auto ids = parse_id_list(a.ids);
  for (int32_t id : ids) {
    if (id >= tok->vocab_size()) {
      throw SpecdError(ErrorCode::invalid_argument, "id " + std::to_string(id) + " is outside the vocabulary of " +
                                                        std::to_string(tok->vocab_size()));
    }
  }
  std::cout << tok->decode(ids) << "\n";
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  auto tok_args = std::make_shared<TokenizeArgs>();
  auto* tok = app.add_subcommand("tokenize", "Print the token ids of a text (needs only the tokenizer files)");
  tok->add_option("--model", tok_args->model, "model directory (default: the committed target)");
  auto* text = tok->add_option("--text", tok_args->text, "text to encode");
  auto* file = tok->add_option("--text-file", tok_args->text_file, "file whose contents to encode");
  text->excludes(file);
  tok->add_flag("--json", tok_args->json, "print {\"ids\": [...]}");
  tok->callback([tok_args, text, file] {
    if (text->count() + file->count() == 0) throw CLI::RequiredError("--text or --text-file");
    run_tokenize(*tok_args);
  });

  auto detok_args = std::make_shared<DetokenizeArgs>();
  auto* detok = app.add_subcommand("detokenize", "Print the text of comma-separated token ids");
  detok->add_option("--model", detok_args->model, "model directory (default: the committed target)");
  detok->add_option("--ids", detok_args->ids, "ids, e.g. 1,2,3")->required();
  detok->callback([detok_args] { run_detokenize(*detok_args); });
}

}  // namespace specd::cli
