// Llama models and tokenizers from GGUF files llama.cpp wrote (../shared/data/gguf, the
// committed pair converted and quantized by llama.cpp b10470): config and every weight
// equal models/target's, greedy generation equal specd's own and compared with llama.cpp's,
// tokenizer ids equal llama.cpp's and the committed SentencePiece model's; refusals of
// files specd cannot run, with their error codes.
#include "tests/support/doctest_torch.hpp"

#include <simdjson.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/gguf_file.hpp"
#include "engine/checkpoint/model_config.hpp"
#include "engine/kernels/packed_weight.hpp"
#include "engine/model/gguf_model.hpp"
#include "engine/model/inference_weights.hpp"
#include "engine/model/kv_cache.hpp"
#include "engine/model/llama_model.hpp"
#include "engine/model/model_files.hpp"
#include "engine/tokenizer/chat_template.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "tests/support/generation_drivers.hpp"
#include "tests/support/gguf_writer.hpp"
#include "tests/support/llama_cpp_greedy.hpp"
#include "tests/support/temp_dir.hpp"

using specd::testing::TempDir;

namespace fs = std::filesystem;
using namespace specd;
using namespace specd::testing;
using specd::testing::GgufWriter;

namespace {

const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "../shared/data/gguf";
const fs::path kModels = fs::path(SPECD_SOURCE_DIR) / "models";

// One run of llama.cpp's server (llama_cpp_greedy.json; see the README beside it).
struct LlamaCppRun {
  std::string file, prompt;
  std::vector<int32_t> prompt_ids, greedy_ids;
};

const std::vector<LlamaCppRun>& llama_cpp_runs() {
  static const std::vector<LlamaCppRun> runs = [] {
    simdjson::dom::parser parser;
    std::vector<LlamaCppRun> out;
    for (simdjson::dom::element e : parser.load((kFixtures / "llama_cpp_greedy.json").string()).get_array()) {
      out.push_back({std::string(e["file"].get_string().value()), std::string(e["prompt"].get_string().value()),
                     ids_of(e["prompt_ids"]), ids_of(e["greedy_ids"])});
    }
    return out;
  }();
  return runs;
}

void check_same_weights(const kernels::PackedWeight& a, const kernels::PackedWeight& b, const std::string& what) {
  INFO(what);
  REQUIRE(a.out() == b.out());
  REQUIRE(a.in() == b.in());
  int64_t differing = 0;
  for (int64_t o = 0; o < a.out(); ++o)
    for (int64_t i = 0; i < a.in(); ++i) differing += a.at(o, i) != b.at(o, i);
  CHECK(differing == 0);
}

// `expected`'s weights quantized as llama-quantize does (specd's quantize_row is
// llama.cpp's reference rounding), or as they are when `dtype` is not a block format.
kernels::PackedWeight as_stored(const kernels::PackedWeight& w, kernels::Dtype dtype) {
  if (!kernels::is_quantized(dtype)) return kernels::PackedWeight::pack(nullptr, 0, 0, kernels::Dtype::f32);
  std::vector<float> rows(static_cast<size_t>(w.out() * w.in()));
  for (int64_t o = 0; o < w.out(); ++o)
    for (int64_t i = 0; i < w.in(); ++i) rows[o * w.in() + i] = w.at(o, i);
  return kernels::PackedWeight::quantize(rows.data(), w.out(), w.in(), dtype);
}

void check_model_weights(const InferenceWeights& hf, const InferenceWeights& gguf, const std::string& file) {
  const auto compare = [&](const kernels::PackedWeight& h, const kernels::PackedWeight& g, const std::string& what) {
    if (kernels::is_quantized(g.dtype())) {
      check_same_weights(as_stored(h, g.dtype()), g, file + " " + what);
    } else {
      check_same_weights(h, g, file + " " + what);
    }
  };
  compare(hf.embed, gguf.embed, "embed");
  for (size_t l = 0; l < hf.layers.size(); ++l) {
    const std::string n = "layer " + std::to_string(l) + " ";
    compare(hf.layers[l].qkv, gguf.layers[l].qkv, n + "qkv");
    compare(hf.layers[l].o, gguf.layers[l].o, n + "o");
    compare(hf.layers[l].gate_up, gguf.layers[l].gate_up, n + "gate_up");
    compare(hf.layers[l].down, gguf.layers[l].down, n + "down");
    CHECK(hf.layers[l].input_norm == gguf.layers[l].input_norm);
    CHECK(hf.layers[l].post_attention_norm == gguf.layers[l].post_attention_norm);
  }
  CHECK(hf.final_norm == gguf.final_norm);
}

std::string milliseconds(double seconds) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << seconds * 1e3 << " ms";
  return s.str();
}

// A one-layer Llama (hidden 256, so K-quant rows fit; zero weights) whose attn_q is stored
// as `q_type` in `q_bytes`.
GgufWriter tiny(const std::string& arch, uint32_t q_type, size_t q_bytes) {
  GgufWriter w;
  w.string("general.architecture", arch).u32(arch + ".block_count", 1).u32(arch + ".embedding_length", 256);
  w.u32(arch + ".feed_forward_length", 256).u32(arch + ".attention.head_count", 2);
  w.f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f).u32(arch + ".context_length", 64);
  w.strings("tokenizer.ggml.tokens", {"a", "b", "c", "d"});
  const std::string norm(256 * 4, '\0'), square(256 * 256 * 4, '\0');
  w.tensor("token_embd.weight", {256, 4}, 0, std::string(256 * 4 * 4, '\0'));
  w.tensor("blk.0.attn_norm.weight", {256}, 0, norm);
  w.tensor("blk.0.attn_q.weight", {256, 256}, q_type, std::string(q_bytes, '\0'));
  for (const char* t : {"attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
    w.tensor(std::string("blk.0.") + t + ".weight", {256, 256}, 0, square);
  w.tensor("blk.0.ffn_norm.weight", {256}, 0, norm).tensor("output_norm.weight", {256}, 0, norm);
  return w;
}

SpecdError load_error(const fs::path& path) {
  try {
    (void)load_model(path);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("load_model(" << path << ") did not throw");
  return SpecdError(ErrorCode::internal, "unreachable");
}

}  // namespace

TEST_CASE("the config of target-f16.gguf equals models/target's config.json") {
  const ModelConfig hf = load_model_config(kModels / "target" / "config.json");
  const ModelConfig g = gguf_model_config(GgufFile::open(kFixtures / "target-f16.gguf"));
  CHECK(g.architecture == hf.architecture);
  CHECK(g.model_type == hf.model_type);
  CHECK(g.vocab_size == hf.vocab_size);
  CHECK(g.hidden_size == hf.hidden_size);
  CHECK(g.intermediate_size == hf.intermediate_size);
  CHECK(g.num_hidden_layers == hf.num_hidden_layers);
  CHECK(g.num_attention_heads == hf.num_attention_heads);
  CHECK(g.num_key_value_heads == hf.num_key_value_heads);
  CHECK(g.head_dim == hf.head_dim);
  CHECK(g.max_position_embeddings == hf.max_position_embeddings);
  CHECK(g.rms_norm_eps == hf.rms_norm_eps);  // 1e-05 from the stored f32
  CHECK(g.rope_theta == hf.rope_theta);
  CHECK_FALSE(g.rope_scaling);
  CHECK(g.tie_word_embeddings == hf.tie_word_embeddings);
  CHECK(g.bos_token_id == hf.bos_token_id);
  CHECK(g.eos_token_ids == hf.eos_token_ids);
  const ModelConfig draft = gguf_model_config(GgufFile::open(kFixtures / "draft-f16.gguf"));
  CHECK(draft.hidden_size == load_model_config(kModels / "draft" / "config.json").hidden_size);
}

TEST_CASE("every weight of the F16 files equals the safetensors' (q and k rows un-permuted)") {
  for (const char* name : {"target", "draft"}) {
    const std::string file = std::string(name) + "-f16.gguf";
    LoadInfo info;
    const auto gguf = load_model(kFixtures / file, WeightFormat::stored, &info);
    const auto hf = cached_model(kModels / name);
    CHECK(info.file_bytes == fs::file_size(kFixtures / file));
    MESSAGE(std::string(file) << " loaded in " << milliseconds(info.seconds));
    check_model_weights(*hf->inference_weights(), *gguf->inference_weights(), file);
    CHECK(gguf->inference_weights()->embed.dtype() == kernels::Dtype::f16);
  }
}

TEST_CASE("every weight of the Q8_0 and Q4_0 files equals the safetensors' quantized with llama.cpp's rounding") {
  for (const char* file : {"target-q8_0.gguf", "target-q4_0.gguf", "draft-q8_0.gguf"}) {
    LoadInfo info;
    const auto gguf = load_model(kFixtures / file, WeightFormat::stored, &info);
    MESSAGE(std::string(file) << " loaded in " << milliseconds(info.seconds));
    const auto hf = cached_model(kModels / (std::string(file).starts_with("draft") ? "draft" : "target"));
    const InferenceWeights& w = *gguf->inference_weights();
    CHECK(kernels::is_quantized(w.layers[0].qkv.dtype()));
    CHECK(w.embed.dtype() == kernels::Dtype::q8_0);  // llama-quantize keeps the tied head at Q8_0
    check_model_weights(*hf->inference_weights(), w, file);
  }
}

TEST_CASE("greedy generation on target-f16.gguf equals specd's own on models/target, token for token") {
  const auto gguf = cached_model(kFixtures / "target-f16.gguf");
  const auto hf = cached_model(kModels / "target");
  int prompts = 0;
  for (const LlamaCppRun& run : llama_cpp_runs()) {
    if (run.file != "target-f16.gguf") continue;
    INFO(run.prompt);
    CHECK(llama_cpp_greedy(*gguf, run.prompt_ids) == llama_cpp_greedy(*hf, run.prompt_ids));
    ++prompts;
  }
  CHECK(prompts == 6);
}

TEST_CASE("greedy generation agrees with llama.cpp's on the same GGUF files (F16, Q8_0: 5 of 6 prompts at least)") {
  std::map<std::string, int> equal, prompts;
  std::ostringstream table;
  table << "first differing index per prompt (- equal) against llama.cpp b10470:";
  std::string current;
  for (const LlamaCppRun& run : llama_cpp_runs()) {
    const auto model = cached_model(kFixtures / run.file);
    const std::vector<int32_t> ours = llama_cpp_greedy(*model, run.prompt_ids);
    for (int32_t id : ours) REQUIRE(id < model->config().vocab_size);
    const int diff = first_difference(ours, run.greedy_ids);
    if (run.file != current) table << "\n  " << std::setw(17) << std::left << run.file << ":", current = run.file;
    table << " " << (diff < 0 ? std::string("-") : std::to_string(diff));
    equal[run.file] += diff < 0;
    ++prompts[run.file];
  }
  MESSAGE(table.str());
  for (const char* file : {"target-f16.gguf", "target-q8_0.gguf", "draft-f16.gguf", "draft-q8_0.gguf"}) {
    INFO(file);
    CHECK(prompts[file] == 6);
    CHECK(equal[file] >= 5);
  }
  CHECK(prompts["target-q4_0.gguf"] == 6);
}

TEST_CASE("the GGUF tokenizer encodes as llama.cpp did: its prompt_ids for every prompt, BOS and EOS ids") {
  for (const char* file : {"target-f16.gguf", "draft-q8_0.gguf"}) {
    const auto tok = load_tokenizer(kFixtures / file);
    CHECK(tok->vocab_size() == 2048);
    CHECK(tok->bos_id() == 1);
    CHECK(tok->eos_ids() == std::vector<int32_t>{2});
    for (const LlamaCppRun& run : llama_cpp_runs()) {
      INFO(file << ": " << run.prompt);
      CHECK(tok->encode(run.prompt, true) == run.prompt_ids);
      CHECK(tok->decode(run.prompt_ids) == run.prompt);
    }
  }
}

TEST_CASE("with add_space_prefix false the GGUF vocabulary tokenizes as the committed tokenizer.model") {
  // The fixtures carry no tokenizer.ggml.add_space_prefix, which llama.cpp reads as true;
  // the committed model adds no dummy prefix. The same pieces with the key set to false
  // must give the committed model's ids exactly.
  const GgufFile f = GgufFile::open(kFixtures / "target-f16.gguf");
  TempDir dir;
  const fs::path path = dir.path / "vocab.gguf";
  GgufWriter w;
  w.string("general.architecture", "llama").string("tokenizer.ggml.model", "llama");
  w.strings("tokenizer.ggml.tokens", f.strings("tokenizer.ggml.tokens"));
  w.floats("tokenizer.ggml.scores", f.floats("tokenizer.ggml.scores"));
  std::vector<int32_t> types;
  for (int64_t t : f.ints("tokenizer.ggml.token_type")) types.push_back(static_cast<int32_t>(t));
  w.i32s("tokenizer.ggml.token_type", types);
  w.u32("tokenizer.ggml.bos_token_id", 1).u32("tokenizer.ggml.eos_token_id", 2);
  w.boolean("tokenizer.ggml.add_space_prefix", false);
  w.write(path);
  const auto gguf = load_tokenizer(path);
  const auto committed = load_tokenizer(kModels / "target");
  for (int32_t id = 0; id < committed->vocab_size(); ++id) REQUIRE(gguf->id_to_piece(id) == committed->id_to_piece(id));
  std::ifstream corpus(fs::path(SPECD_SOURCE_DIR) / "../shared/data/tinyshakespeare.txt");
  std::string line, text;
  int lines = 0, equal = 0;
  while (lines < 3000 && std::getline(corpus, line)) {
    text += line + "\n";
    if (++lines % 10 != 0) continue;
    equal += gguf->encode(text, true) == committed->encode(text, true);
    text.clear();
  }
  CHECK(equal == 300);
  for (std::string s : {"", " leading", "two  spaces", "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80", "\n\n\t"}) {
    INFO(s);
    CHECK(gguf->encode(s, false) == committed->encode(s, false));
  }
}

TEST_CASE("the GGUF's chat template renders as the model directory's: speaker turns, BOS and EOS from the vocabulary") {
  const ChatTemplate t = ChatTemplate::from_model_dir(kFixtures / "target-f16.gguf");
  CHECK(t.bos_token() == "<s>");
  CHECK(t.eos_token() == "</s>");
  const std::vector<ChatMessage> messages = {{"user", "Who goes there?"}};
  CHECK(t.render(messages) == ChatTemplate::from_model_dir(kModels / "target").render(messages));
}

TEST_CASE("refusals: wrong magic, truncated, another architecture, unsupported tensor types, another tokenizer") {
  TempDir dir;
  const fs::path path = dir.path / "bad.gguf";
  GgufWriter::write_bytes(path, "GGML\x03\x00\x00\x00");
  SpecdError e = load_error(path);
  CHECK(e.code() == ErrorCode::bad_value);
  CHECK(e.message() == path.string() + ": not a GGUF file (the magic is not \"GGUF\")");

  std::ifstream in(kFixtures / "target-q8_0.gguf", std::ios::binary);
  std::string bytes(4 << 20, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  GgufWriter::write_bytes(path, bytes);
  e = load_error(path);
  CHECK(e.code() == ErrorCode::truncated_file);
  CHECK(e.message().starts_with(path.string() + ": tensor "));

  tiny("llama", 0, 256 * 256 * 4).write(path);
  CHECK(load_model(path)->config().num_hidden_layers == 1);  // the control: this one loads

  tiny("gemma2", 0, 256 * 256 * 4).write(path);
  e = load_error(path);
  CHECK(e.code() == ErrorCode::unsupported_architecture);
  CHECK(e.message() ==
        path.string() + ": general.architecture is 'gemma2'; specd supports 'llama', 'qwen2' and 'qwen3'");

  tiny("llama", 12, 256 * 144).write(path);  // Q4_K (144 bytes a block of 256) beside F32 k and v: a stacked qkv
  CHECK(load_model(path)->config().num_hidden_layers == 1);
  tiny("llama", 10, 256 * 84).write(path);  // Q2_K: 84 bytes a block of 256
  e = load_error(path);
  CHECK(e.code() == ErrorCode::unsupported_dtype);
  CHECK(e.message() == path.string() +
                           ": tensor blk.0.attn_q.weight is Q2_K; specd loads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, "
                           "Q5_1, Q4_K, Q5_K and Q6_K tensors (Q2_K, Q3_K and the IQ types have no kernel: choose a "
                           "Q4_K_M or larger preset)");
  tiny("llama", 11, 256 * 110).write(path);
  CHECK(load_error(path).message().find("tensor blk.0.attn_q.weight is Q3_K;") != std::string::npos);
  tiny("llama", 23, 256 * 136).write(path);
  CHECK(load_error(path).message().find("tensor blk.0.attn_q.weight is IQ4_XS;") != std::string::npos);
  tiny("llama", 99, 0).write(path);  // a type ggml does not define
  CHECK(load_error(path).message().find("tensor blk.0.attn_q.weight is type 99;") != std::string::npos);

  GgufWriter bias = tiny("llama", 0, 256 * 256 * 4);
  bias.tensor("blk.0.attn_q.bias", {256}, 0, std::string(256 * 4, '\0')).write(path);
  e = load_error(path);
  CHECK(e.code() == ErrorCode::unsupported_architecture);
  CHECK(e.message().find("tensor blk.0.attn_q.bias is not part of a llama model") != std::string::npos);

  GgufWriter bert = tiny("llama", 0, 256 * 256 * 4);
  bert.string("tokenizer.ggml.model", "bert").write(path);
  try {
    (void)load_tokenizer(path);
    FAIL("no throw");
  } catch (const SpecdError& err) {
    CHECK(err.code() == ErrorCode::unsupported_architecture);
    CHECK(err.message() ==
          path.string() + ": tokenizer.ggml.model is 'bert'; specd reads 'llama' (SentencePiece) and 'gpt2' (BPE)");
  }
}

TEST_CASE("llama3 rope scaling written as rope_freqs.weight reads back as its parameters; other divisors are refused") {
  TempDir dir;
  const fs::path path = dir.path / "rope.gguf";
  ModelConfig c;
  c.head_dim = 128;
  c.rope_theta = 10000;
  const at::Tensor base = rope_inverse_frequencies(c);
  c.rope_scaling = RopeScaling{"llama3", 32, 1, 4, 8192};
  const at::Tensor divisors = (base / rope_inverse_frequencies(c)).contiguous();
  std::string bytes(64 * 4, '\0');
  std::memcpy(bytes.data(), divisors.data_ptr<float>(), bytes.size());
  GgufWriter w = tiny("llama", 0, 256 * 256 * 4);
  w.tensor("rope_freqs.weight", {64}, 0, bytes).write(path);
  const ModelConfig g = load_model(path)->config();
  REQUIRE(g.rope_scaling);
  CHECK(g.rope_scaling->rope_type == "llama3");
  CHECK(g.rope_scaling->factor == doctest::Approx(32).epsilon(1e-6));
  CHECK(g.rope_scaling->original_max_position_embeddings == 8192);

  std::vector<float> twos(64, 2.0f);
  std::memcpy(bytes.data(), twos.data(), bytes.size());
  GgufWriter other = tiny("llama", 0, 256 * 256 * 4);
  other.tensor("rope_freqs.weight", {64}, 0, bytes).write(path);
  const SpecdError e = load_error(path);
  CHECK(e.code() == ErrorCode::unsupported_architecture);
  CHECK(e.message().find("rope_freqs.weight is not llama3 rope scaling") != std::string::npos);
}
