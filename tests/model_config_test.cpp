// Tests for engine/checkpoint/model_config: parsing HF config.json into ModelConfig, defaults,
// validation errors (code and the field named in the message) and the JSON round trip.
#include "engine/checkpoint/model_config.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "engine/base/errors.hpp"

using namespace specd;

namespace {

// The config.json of meta-llama/Llama-3.2-1B-Instruct, as published.
const std::string kLlama32Config = R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [
    128001,
    128008,
    128009
  ],
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

// Only the required fields; everything else takes its default.
const std::string kMinimalConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 512, "hidden_size": 96, "intermediate_size": 256,
  "num_hidden_layers": 2, "num_attention_heads": 6
})";

// Replaces the value of the first `"key": value` in json (an object or a scalar).
std::string with_field(const std::string& json, const std::string& key, const std::string& value) {
  std::regex field("\"" + key + "\": *(\\{[^}]*\\}|[^,\n}]*)");
  std::string out =
      std::regex_replace(json, field, "\"" + key + "\": " + value, std::regex_constants::format_first_only);
  REQUIRE(out != json);
  return out;
}

// Removes `"key": value` with its trailing comma, or its leading one when it is last.
std::string without_field(const std::string& json, const std::string& key) {
  std::string out = std::regex_replace(json, std::regex("\n *\"" + key + "\": *[^,\n]*,"), "",
                                       std::regex_constants::format_first_only);
  if (out == json)
    out = std::regex_replace(json, std::regex(",\n *\"" + key + "\": *[^,\n}]*"), "",
                             std::regex_constants::format_first_only);
  REQUIRE(out != json);
  return out;
}

// Parses json expecting a SpecdError; checks its code and that the message names
// the source and every string in `mentions`.
void check_error(const std::string& json, ErrorCode code, std::initializer_list<std::string> mentions) {
  try {
    parse_model_config(json, "models/x/config.json");
    FAIL("expected SpecdError ", error_code_name(code));
  } catch (const SpecdError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(e.code() == code, what);
    CHECK_MESSAGE(what.find("models/x/config.json") != std::string::npos, what);
    for (const auto& m : mentions) CHECK_MESSAGE(what.find(m) != std::string::npos, "'", m, "' not in ", what);
  }
}

}  // namespace

TEST_CASE("Llama 3.2 1B config parses to its exact values") {
  ModelConfig c = parse_model_config(kLlama32Config, "config.json");
  CHECK(c.architecture == "LlamaForCausalLM");
  CHECK(c.model_type == "llama");
  CHECK(c.vocab_size == 128256);
  CHECK(c.hidden_size == 2048);
  CHECK(c.intermediate_size == 8192);
  CHECK(c.num_hidden_layers == 16);
  CHECK(c.num_attention_heads == 32);
  CHECK(c.num_key_value_heads == 8);
  CHECK(c.head_dim == 64);
  CHECK(c.max_position_embeddings == 131072);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK(c.rope_theta == 500000.0);
  REQUIRE(c.rope_scaling.has_value());
  CHECK(c.rope_scaling->rope_type == "llama3");
  CHECK(c.rope_scaling->factor == 32.0);
  CHECK(c.rope_scaling->low_freq_factor == 1.0);
  CHECK(c.rope_scaling->high_freq_factor == 4.0);
  CHECK(c.rope_scaling->original_max_position_embeddings == 8192);
  CHECK(c.tie_word_embeddings);
  CHECK(c.hidden_act == "silu");
  CHECK(c.bos_token_id == 128000);
  CHECK(c.eos_token_ids == std::vector<int32_t>{128001, 128008, 128009});
  CHECK(c.torch_dtype == "bfloat16");
}

TEST_CASE("absent optional fields take the Llama defaults") {
  ModelConfig c = parse_model_config(kMinimalConfig, "config.json");
  CHECK(c.num_key_value_heads == 6);
  CHECK(c.head_dim == 16);
  CHECK(c.max_position_embeddings == 2048);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK(c.rope_theta == 10000.0);
  CHECK_FALSE(c.rope_scaling.has_value());
  CHECK_FALSE(c.tie_word_embeddings);
  CHECK(c.hidden_act == "silu");
  CHECK_FALSE(c.bos_token_id.has_value());
  CHECK(c.eos_token_ids.empty());
  CHECK(c.torch_dtype.empty());
}

TEST_CASE("null optional fields are the same as absent ones") {
  std::string json = with_field(kLlama32Config, "rope_scaling", "null");
  json = with_field(json, "bos_token_id", "null");
  json = with_field(json, "num_key_value_heads", "null");
  ModelConfig c = parse_model_config(json, "config.json");
  CHECK_FALSE(c.rope_scaling.has_value());
  CHECK_FALSE(c.bos_token_id.has_value());
  CHECK(c.num_key_value_heads == 32);
}

TEST_CASE("a single integer eos_token_id becomes a one-element list") {
  std::string json =
      std::regex_replace(kLlama32Config, std::regex("\\[\\s*128001,\\s*128008,\\s*128009\\s*\\]"), "128009");
  CHECK(parse_model_config(json, "config.json").eos_token_ids == std::vector<int32_t>{128009});
}

TEST_CASE("rope_scaling accepts the older key 'type' and treats 'default' as none") {
  std::string legacy = std::regex_replace(kLlama32Config, std::regex("\"rope_type\""), "\"type\"");
  ModelConfig c = parse_model_config(legacy, "config.json");
  REQUIRE(c.rope_scaling.has_value());
  CHECK(c.rope_scaling->rope_type == "llama3");
  CHECK(c.rope_scaling->factor == 32.0);
  std::string plain = with_field(kLlama32Config, "rope_scaling", R"({"rope_type": "default"})");
  CHECK_FALSE(parse_model_config(plain, "config.json").rope_scaling.has_value());
}

TEST_CASE("unknown fields are ignored and 'dtype' stands in for 'torch_dtype'") {
  std::string json = with_field(kLlama32Config, "torch_dtype", R"("float16", "some_future_field": {"a": [1, 2]})");
  CHECK(parse_model_config(json, "config.json").torch_dtype == "float16");
  std::string renamed = std::regex_replace(kLlama32Config, std::regex("\"torch_dtype\""), "\"dtype\"");
  CHECK(parse_model_config(renamed, "config.json").torch_dtype == "bfloat16");
}

TEST_CASE("missing required fields are missing_field naming the field") {
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "model_type", "architectures"}) {
    CAPTURE(key);
    std::string json = std::string(key) == "architectures"
                           ? std::regex_replace(kLlama32Config, std::regex("\"architectures\": \\[[^\\]]*\\],"), "")
                           : without_field(kLlama32Config, key);
    check_error(json, ErrorCode::missing_field, {std::string("'") + key + "'"});
  }
  check_error(with_field(kLlama32Config, "rope_scaling", R"({"factor": 8.0})"), ErrorCode::missing_field,
              {"rope_scaling.rope_type"});
  check_error(without_field(kLlama32Config, "low_freq_factor"), ErrorCode::missing_field,
              {"rope_scaling.low_freq_factor"});
}

TEST_CASE("wrong JSON types are bad_value naming the field") {
  check_error(with_field(kLlama32Config, "hidden_size", "\"2048\""), ErrorCode::bad_value, {"hidden_size", "integer"});
  check_error(with_field(kLlama32Config, "num_hidden_layers", "16.5"), ErrorCode::bad_value, {"num_hidden_layers"});
  check_error(with_field(kLlama32Config, "rms_norm_eps", "\"1e-5\""), ErrorCode::bad_value, {"rms_norm_eps"});
  check_error(with_field(kLlama32Config, "tie_word_embeddings", "1"), ErrorCode::bad_value, {"tie_word_embeddings"});
  check_error(with_field(kLlama32Config, "rope_scaling", "32"), ErrorCode::bad_value, {"rope_scaling"});
  check_error(with_field(kLlama32Config, "factor", "\"32\""), ErrorCode::bad_value, {"rope_scaling.factor"});
  check_error(with_field(kLlama32Config, "bos_token_id", "-1"), ErrorCode::bad_value, {"bos_token_id"});
  check_error(with_field(kLlama32Config, "vocab_size", "9999999999999999999"), ErrorCode::bad_value, {"vocab_size"});
}

TEST_CASE("non-positive sizes and inconsistent heads are bad_value naming the field") {
  for (const char* key : {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "max_position_embeddings"}) {
    CAPTURE(key);
    check_error(with_field(kLlama32Config, key, "0"), ErrorCode::bad_value, {key, "positive"});
    check_error(with_field(kLlama32Config, key, "-4"), ErrorCode::bad_value, {key});
  }
  check_error(with_field(kLlama32Config, "rms_norm_eps", "0"), ErrorCode::bad_value, {"rms_norm_eps"});
  check_error(with_field(kLlama32Config, "rope_theta", "-1.0"), ErrorCode::bad_value, {"rope_theta"});
  check_error(with_field(kLlama32Config, "num_key_value_heads", "5"), ErrorCode::bad_value,
              {"num_key_value_heads", "num_attention_heads"});
  check_error(with_field(kMinimalConfig, "hidden_size", "100"), ErrorCode::bad_value, {"head_dim", "hidden_size"});
  check_error(with_field(kLlama32Config, "high_freq_factor", "1.0"), ErrorCode::bad_value,
              {"rope_scaling.high_freq_factor"});
}

TEST_CASE("other architectures are unsupported_architecture naming the field and value") {
  check_error(with_field(kLlama32Config, "model_type", "\"mistral\""), ErrorCode::unsupported_architecture,
              {"model_type", "mistral"});
  check_error(std::regex_replace(kLlama32Config, std::regex("LlamaForCausalLM"), "MistralForCausalLM"),
              ErrorCode::unsupported_architecture, {"architectures[0]", "MistralForCausalLM"});
  check_error(std::regex_replace(kLlama32Config, std::regex("LlamaForCausalLM"), "Qwen2ForCausalLM"),
              ErrorCode::unsupported_architecture, {"model_type", "llama", "qwen2"});
  check_error(with_field(kLlama32Config, "hidden_act", "\"gelu\""), ErrorCode::unsupported_architecture,
              {"hidden_act", "gelu"});
  check_error(with_field(kLlama32Config, "rope_type", "\"yarn\""), ErrorCode::unsupported_architecture,
              {"rope_scaling.rope_type", "yarn"});
  check_error(with_field(kLlama32Config, "rope_scaling", R"({"type": "linear", "factor": 2.0})"),
              ErrorCode::unsupported_architecture, {"rope_scaling.type", "linear"});
  check_error(with_field(kLlama32Config, "attention_bias", "true"), ErrorCode::unsupported_architecture,
              {"attention_bias"});
}

TEST_CASE("malformed JSON is malformed_json naming the source") {
  check_error(kLlama32Config.substr(0, kLlama32Config.size() / 2), ErrorCode::malformed_json, {});
  check_error("", ErrorCode::malformed_json, {});
  check_error("[1, 2]", ErrorCode::malformed_json, {"object"});
  check_error(R"({"vocab_size": 12,})", ErrorCode::malformed_json, {});
}

TEST_CASE("to_json output parses back to the same config") {
  for (const std::string* source : {&kLlama32Config, &kMinimalConfig}) {
    ModelConfig a = parse_model_config(*source, "config.json");
    std::string json = model_config_to_json(a);
    ModelConfig b = parse_model_config(json, "round-trip");
    CHECK(b.architecture == a.architecture);
    CHECK(b.model_type == a.model_type);
    CHECK(b.vocab_size == a.vocab_size);
    CHECK(b.hidden_size == a.hidden_size);
    CHECK(b.intermediate_size == a.intermediate_size);
    CHECK(b.num_hidden_layers == a.num_hidden_layers);
    CHECK(b.num_attention_heads == a.num_attention_heads);
    CHECK(b.num_key_value_heads == a.num_key_value_heads);
    CHECK(b.head_dim == a.head_dim);
    CHECK(b.max_position_embeddings == a.max_position_embeddings);
    CHECK(b.rms_norm_eps == a.rms_norm_eps);
    CHECK(b.rope_theta == a.rope_theta);
    CHECK(b.rope_scaling.has_value() == a.rope_scaling.has_value());
    if (a.rope_scaling) {
      CHECK(b.rope_scaling->rope_type == a.rope_scaling->rope_type);
      CHECK(b.rope_scaling->factor == a.rope_scaling->factor);
      CHECK(b.rope_scaling->low_freq_factor == a.rope_scaling->low_freq_factor);
      CHECK(b.rope_scaling->high_freq_factor == a.rope_scaling->high_freq_factor);
      CHECK(b.rope_scaling->original_max_position_embeddings == a.rope_scaling->original_max_position_embeddings);
    }
    CHECK(b.tie_word_embeddings == a.tie_word_embeddings);
    CHECK(b.hidden_act == a.hidden_act);
    CHECK(b.bos_token_id == a.bos_token_id);
    CHECK(b.eos_token_ids == a.eos_token_ids);
    CHECK(b.torch_dtype == a.torch_dtype);
  }
}

TEST_CASE("to_json writes HF-style text: architectures array, floats with a point, null rope_scaling") {
  std::string llama = model_config_to_json(parse_model_config(kLlama32Config, "config.json"));
  CHECK(llama.find("\"architectures\": [\n    \"LlamaForCausalLM\"\n  ]") != std::string::npos);
  CHECK(llama.find("\"rope_theta\": 500000.0,") != std::string::npos);
  CHECK(llama.find("\"rms_norm_eps\": 1e-05,") != std::string::npos);
  CHECK(llama.find("\"rope_type\": \"llama3\"") != std::string::npos);
  CHECK(llama.find("\"eos_token_id\": [\n    128001,\n    128008,\n    128009\n  ]") != std::string::npos);
  std::string minimal = model_config_to_json(parse_model_config(kMinimalConfig, "config.json"));
  CHECK(minimal.find("\"rope_scaling\": null,") != std::string::npos);
  CHECK(minimal.find("\"bos_token_id\": null,") != std::string::npos);
}

// The committed pair's config.json files were written by model_config_to_json when
// the pair was trained: writing them again must give the same bytes.
TEST_CASE("to_json reproduces the committed models' config.json byte for byte") {
  for (const char* model : {"draft", "target"}) {
    const std::string path = std::string(SPECD_SOURCE_DIR) + "/models/" + model + "/config.json";
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    REQUIRE(!text.empty());
    CHECK(model_config_to_json(parse_model_config(text, path)) == text);
  }
}

TEST_CASE("load_model_config reads a file and names a missing one") {
  const auto dir = std::filesystem::temp_directory_path() / ("specd_model_config_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << kLlama32Config;
  CHECK(load_model_config(dir / "config.json").hidden_size == 2048);
  const auto missing = dir / "absent" / "config.json";
  try {
    load_model_config(missing);
    FAIL("expected missing_file");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(std::string(e.what()).find(missing.string()) != std::string::npos);
  }
  std::ofstream(dir / "broken.json") << "{\"vocab_size\": ";
  CHECK_THROWS_WITH_AS(load_model_config(dir / "broken.json"), doctest::Contains("broken.json"), SpecdError);
  std::filesystem::remove_all(dir);
}
