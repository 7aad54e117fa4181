// specd_train: trains the default tiny draft/target pair from a text corpus.
// 1. a SentencePiece BPE tokenizer on the training split, 2. the target Llama,
// 3. the draft Llama distilled from the target's soft labels; writes both as HF model
// directories sharing the tokenizer, plus train_report.json with the figures.
#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/sentencepiece_tokenizer.hpp"
#include "json/json_number.hpp"
#include "json/json_serialize.hpp"
#include "tools/train/lm_trainer.hpp"

namespace fs = std::filesystem;
using namespace specd;

namespace {

struct Shape {
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, intermediate = 0;
};

struct Args {
  std::string corpus = "../shared/data/tinyshakespeare.txt";
  std::string out_dir = "models";
  int64_t vocab_size = 2048;
  double validation_fraction = 0.1;
  Shape target{384, 6, 6, 2, 1024};
  Shape draft{128, 2, 4, 2, 384};
  int64_t max_positions = 1024;
  TrainOptions target_train, draft_train;
  std::string teacher;  // when set: reuse this target (and its tokenizer), train only the draft
  uint64_t seed = 1234;
  int threads = 2;
};

// Paragraphs (speeches in the Shakespeare corpus) separated by blank lines.
std::vector<std::string> paragraphs(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 2;
  }
  return out;
}

// Each paragraph is followed by EOS, so the model learns where a turn ends.
std::vector<int32_t> encode_stream(const Tokenizer& tok, const std::vector<std::string>& paras) {
  std::vector<int32_t> ids;
  for (const auto& p : paras) {
    auto piece = tok.encode(p, false);
    ids.insert(ids.end(), piece.begin(), piece.end());
    ids.push_back(tok.eos_ids().front());
  }
  return ids;
}

ModelConfig make_config(const Shape& s, int64_t vocab, int64_t max_positions) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.model_type = "llama";
  c.vocab_size = vocab;
  c.hidden_size = s.hidden;
  c.intermediate_size = s.intermediate;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.head_dim = s.hidden / s.heads;
  c.max_position_embeddings = max_positions;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = true;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.torch_dtype = "float16";
  return c;
}

// A small JSON file in the layout transformers writes (indented, ending in a newline).
void write_json_file(const fs::path& file, const boost::json::object& content) {
  std::ofstream(file) << serialize_json_indented(content) << "\n";
}

// The tiny pair's chat format mirrors the corpus: "SPEAKER:\ntext" turns ended by EOS.
void write_tokenizer_files(const fs::path& dir, const fs::path& spm_model) {
  fs::copy_file(spm_model, dir / "tokenizer.model", fs::copy_options::overwrite_existing);
  write_json_file(dir / "generation_config.json",
                  {{"bos_token_id", 1}, {"eos_token_id", {2}}, {"do_sample", false}, {"max_length", 1024}});
  write_json_file(dir / "tokenizer_config.json", {{"tokenizer_class", "LlamaTokenizer"},
                                                  {"bos_token", "<s>"},
                                                  {"eos_token", "</s>"},
                                                  {"add_bos_token", true},
                                                  {"add_eos_token", false},
                                                  {"model_max_length", 1024},
                                                  {"specd_chat_template", "speaker-turns"},
                                                  {"chat_template", std::string(kSpeakerTurnsTemplate)}});
}

void add_shape_options(CLI::App& app, const std::string& who, Shape& s) {
  app.add_option("--" + who + "-hidden", s.hidden, who + " hidden size")->capture_default_str();
  app.add_option("--" + who + "-layers", s.layers, who + " layers")->capture_default_str();
  app.add_option("--" + who + "-heads", s.heads, who + " attention heads")->capture_default_str();
  app.add_option("--" + who + "-kv-heads", s.kv_heads, who + " key/value heads")->capture_default_str();
  app.add_option("--" + who + "-intermediate", s.intermediate, who + " MLP size")->capture_default_str();
}

void add_train_options(CLI::App& app, const std::string& who, TrainOptions& o) {
  app.add_option("--" + who + "-steps", o.steps, who + " optimizer steps")->capture_default_str();
  app.add_option("--" + who + "-lr", o.learning_rate, who + " peak learning rate")->capture_default_str();
  app.add_option("--" + who + "-batch", o.batch_size, who + " sequences per step")->capture_default_str();
  app.add_option("--" + who + "-max-seconds", o.max_seconds, who + " wall-time cap (0: none)")->capture_default_str();
}

std::shared_ptr<LlamaModel> train_one(const std::string& label, const Shape& shape, const Args& a, int64_t vocab,
                                      TrainOptions o, const std::vector<int32_t>& train,
                                      const std::vector<int32_t>& val, TrainReport& report) {
  auto model = std::make_shared<LlamaModel>(make_config(shape, vocab, a.max_positions));
  init_weights(*model, a.seed);
  std::printf("[%s] %lld parameters\n", label.c_str(), static_cast<long long>(model->parameter_count()));
  o.label = label;
  o.seed = a.seed;
  o.bos_id = 1;
  report = train_language_model(*model, train, val, o);
  std::printf("[%s] done: %lld steps in %.0fs, validation loss %.4f\n", label.c_str(),
              static_cast<long long>(report.steps_done), report.seconds, report.validation_loss);
  return model;
}

int run(const Args& a) {
  at::set_num_threads(a.threads);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string text = read_whole_file(a.corpus, "corpus");
  size_t cut = text.rfind("\n\n", static_cast<size_t>(text.size() * (1 - a.validation_fraction)));
  const auto train_paras = paragraphs(text.substr(0, cut));
  const auto val_paras = paragraphs(text.substr(cut + 2));

  const fs::path out(a.out_dir), work = out / ".train-work";
  fs::create_directories(work);
  const fs::path spm_model = a.teacher.empty() ? work / "tokenizer.model" : fs::path(a.teacher) / "tokenizer.model";
  if (a.teacher.empty()) {
    std::ofstream(work / "train.txt") << text.substr(0, cut);
    train_sentencepiece("--input=" + (work / "train.txt").string() + " --model_prefix=" +
                        (work / "tokenizer").string() + " --vocab_size=" + std::to_string(a.vocab_size) +
                        " --model_type=bpe --byte_fallback=true --character_coverage=1.0"
                        " --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=false"
                        " --split_digits=true --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=2"
                        " --minloglevel=1");
  }
  SentencePieceTokenizer tok(spm_model);
  const auto train_ids = encode_stream(tok, train_paras), val_ids = encode_stream(tok, val_paras);
  std::printf("tokenizer: vocab %d, %zu training tokens, %zu validation tokens\n", tok.vocab_size(), train_ids.size(),
              val_ids.size());

  TrainReport target_report, draft_report;
  std::shared_ptr<LlamaModel> target;
  if (a.teacher.empty()) {
    target = train_one("target", a.target, a, tok.vocab_size(), a.target_train, train_ids, val_ids, target_report);
    save_model(*target, out / "target", DType::F16);
    write_tokenizer_files(out / "target", spm_model);
  } else {
    target = load_reference_model(a.teacher);  // the teacher runs forward_full
    target_report.validation_loss = validation_loss(*target, val_ids, a.target_train.seq_len,
                                                    a.target_train.eval_batches * 4, a.target_train.batch_size, 1);
    std::printf("[target] loaded from %s, validation loss %.4f\n", a.teacher.c_str(), target_report.validation_loss);
  }
  TrainOptions draft_opts = a.draft_train;
  draft_opts.teacher = target;
  auto draft = train_one("draft", a.draft, a, tok.vocab_size(), draft_opts, train_ids, val_ids, draft_report);
  save_model(*draft, out / "draft", DType::F16);
  write_tokenizer_files(out / "draft", spm_model);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto model_json = [](const LlamaModel& model, const TrainReport& report) {
    return boost::json::object{{"parameters", model.parameter_count()},
                               {"steps", report.steps_done},
                               {"seconds", round_to(report.seconds, 2)},
                               {"validation_loss", round_to(report.validation_loss, 5)}};
  };
  write_json_file(out / "train_report.json", {{"wall_seconds", round_to(total, 2)},
                                              {"training_tokens", train_ids.size()},
                                              {"validation_tokens", val_ids.size()},
                                              {"target", model_json(*target, target_report)},
                                              {"draft", model_json(*draft, draft_report)}});
  fs::remove_all(work);
  std::printf("wrote %s/target and %s/draft in %.0fs\n", a.out_dir.c_str(), a.out_dir.c_str(), total);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  a.target_train.steps = 3000;
  a.target_train.learning_rate = 1e-3;
  a.draft_train.steps = 3000;
  a.draft_train.learning_rate = 2e-3;
  a.draft_train.distill_weight = 0.8;
  CLI::App app{"Train the default tiny draft/target Llama pair for specd"};
  app.add_option("--corpus", a.corpus, "training text")->capture_default_str();
  app.add_option("--out", a.out_dir, "output folder (gets target/ and draft/)")->capture_default_str();
  app.add_option("--vocab-size", a.vocab_size, "SentencePiece BPE vocabulary")
      ->capture_default_str()
      ->check(CLI::Range(300, 65536));
  app.add_option("--seq-len", a.target_train.seq_len, "training window")->capture_default_str();
  app.add_option("--distill-weight", a.draft_train.distill_weight, "weight of the target's soft labels for the draft")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--teacher", a.teacher, "existing target directory: train only a draft distilled from it");
  app.add_option("--seed", a.seed, "random seed")->capture_default_str();
  app.add_option("--threads", a.threads, "intra-op threads")->capture_default_str()->check(CLI::Range(1, 256));
  add_shape_options(app, "target", a.target);
  add_shape_options(app, "draft", a.draft);
  add_train_options(app, "target", a.target_train);
  add_train_options(app, "draft", a.draft_train);
  CLI11_PARSE(app, argc, argv);
  a.draft_train.seq_len = a.target_train.seq_len;
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd_train: %s\n", e.what());
    return 1;
  }
}
