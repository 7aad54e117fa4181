#include "engine/checkpoint/model_config.hpp"

#include <simdjson.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cmath>
#include <limits>

#include "engine/base/errors.hpp"
#include "engine/base/text_file.hpp"
#include "json/json_serialize.hpp"

namespace specd {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

const char* json_type_name(element e) {
  switch (e.type()) {
    case element_type::ARRAY:
      return "an array";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
      return "an integer";
    case element_type::DOUBLE:
      return "a number with a fraction";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "an unknown JSON value";
}

// Reads the fields of one JSON object; every error names the source file and the
// field's full path (e.g. "rope_scaling.factor").
class FieldReader {
 public:
  FieldReader(object obj, const std::string& source, std::string prefix = "")
      : obj_(obj), source_(source), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(ErrorCode code, std::string_view key, const std::string& problem) const {
    throw SpecdError(code, source_ + ": field '" + path(key) + "' " + problem);
  }
  [[noreturn]] void fail_type(std::string_view key, const char* expected, element got) const {
    fail(ErrorCode::bad_value, key, std::string("must be ") + expected + ", got " + json_type_name(got));
  }
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }
  const std::string& source() const { return source_; }

  // Absent and null are the same: HF writes null for "use the default".
  std::optional<element> find(std::string_view key) const {
    element e;
    if (obj_.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  }
  element require(std::string_view key) const {
    auto e = find(key);
    if (!e) fail(ErrorCode::missing_field, key, "is missing");
    return *e;
  }

  int64_t to_int(element e, std::string_view key) const {
    int64_t v = 0;
    auto err = e.get_int64().get(v);
    if (err == simdjson::NUMBER_OUT_OF_RANGE) fail(ErrorCode::bad_value, key, "is out of range");
    if (err) fail_type(key, "an integer", e);
    return v;
  }
  double to_double(element e, std::string_view key) const {
    double v = 0;
    if (e.get_double().get(v)) fail_type(key, "a number", e);
    return v;
  }
  std::string to_string(element e, std::string_view key) const {
    std::string_view v;
    if (e.get_string().get(v)) fail_type(key, "a string", e);
    return std::string(v);
  }
  int32_t to_token_id(element e, std::string_view key) const {
    int64_t v = to_int(e, key);
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
      fail(ErrorCode::bad_value, key, "is not a valid token id: " + std::to_string(v));
    return static_cast<int32_t>(v);
  }

  int64_t positive_int(std::string_view key, std::optional<int64_t> fallback = std::nullopt) const {
    auto e = find(key);
    if (!e && !fallback) fail(ErrorCode::missing_field, key, "is missing");
    int64_t v = e ? to_int(*e, key) : *fallback;
    if (v <= 0) fail(ErrorCode::bad_value, key, "must be positive, got " + std::to_string(v));
    return v;
  }
  double positive_double(std::string_view key, double fallback) const {
    auto e = find(key);
    double v = e ? to_double(*e, key) : fallback;
    if (!(v > 0) || !std::isfinite(v)) fail(ErrorCode::bad_value, key, "must be a positive finite number");
    return v;
  }
  bool boolean(std::string_view key, bool fallback) const {
    auto e = find(key);
    if (!e) return fallback;
    bool v = false;
    if (e->get_bool().get(v)) fail_type(key, "a boolean", *e);
    return v;
  }
  std::string text(std::string_view key, std::string fallback) const {
    auto e = find(key);
    return e ? to_string(*e, key) : fallback;
  }

 private:
  object obj_;
  const std::string& source_;
  std::string prefix_;
};

void read_architecture(const FieldReader& r, ModelConfig& c) {
  element archs = r.require("architectures");
  simdjson::dom::array arr;
  if (archs.get_array().get(arr)) r.fail_type("architectures", "an array", archs);
  if (arr.size() == 0) r.fail(ErrorCode::bad_value, "architectures", "is empty");
  c.architecture = r.to_string(*arr.begin(), "architectures[0]");
  const char* model_type = model_type_of(c.architecture);
  if (!model_type)
    r.fail(ErrorCode::unsupported_architecture, "architectures[0]",
           "is '" + c.architecture + "'; specd supports LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM");
  c.model_type = r.to_string(r.require("model_type"), "model_type");
  if (c.model_type != model_type)
    r.fail(ErrorCode::unsupported_architecture, "model_type",
           "is '" + c.model_type + "'; " + c.architecture + " needs '" + model_type + "'");
  c.hidden_act = r.text("hidden_act", "silu");
  if (c.hidden_act != "silu")
    r.fail(ErrorCode::unsupported_architecture, "hidden_act", "is '" + c.hidden_act + "'; specd supports only 'silu'");
  c.qkv_bias = c.model_type == "qwen2";  // transformers' Qwen2Attention always has them
  c.qk_norm = c.model_type == "qwen3";
  // Other biased projections change the weights the loader expects; refuse rather than
  // ignore. (Qwen3's attention_bias would bias o_proj too.)
  if (c.model_type != "qwen2" && r.boolean("attention_bias", false))
    r.fail(ErrorCode::unsupported_architecture, "attention_bias",
           "is true; specd supports biases only on Qwen2's q, k and v projections");
  if (r.boolean("mlp_bias", false))
    r.fail(ErrorCode::unsupported_architecture, "mlp_bias", "is true; specd supports only bias-free MLPs");
  if (r.boolean("use_sliding_window", false))
    r.fail(ErrorCode::unsupported_architecture, "use_sliding_window",
           "is true; specd attends over the whole context in every layer");
}

void read_sizes(const FieldReader& r, ModelConfig& c) {
  c.vocab_size = r.positive_int("vocab_size");
  c.hidden_size = r.positive_int("hidden_size");
  c.intermediate_size = r.positive_int("intermediate_size");
  c.num_hidden_layers = r.positive_int("num_hidden_layers");
  c.num_attention_heads = r.positive_int("num_attention_heads");
  c.num_key_value_heads = r.positive_int("num_key_value_heads", c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    r.fail(ErrorCode::bad_value, "num_key_value_heads",
           "(" + std::to_string(c.num_key_value_heads) + ") must divide num_attention_heads (" +
               std::to_string(c.num_attention_heads) + ")");
  if (!r.find("head_dim") && c.model_type != "qwen3" && c.hidden_size % c.num_attention_heads != 0)
    r.fail(ErrorCode::bad_value, "head_dim",
           "is absent and hidden_size (" + std::to_string(c.hidden_size) +
               ") is not divisible by num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  // transformers' Qwen3Config defaults head_dim to 128, not hidden_size / heads.
  c.head_dim = r.positive_int("head_dim", c.model_type == "qwen3" ? 128 : c.hidden_size / c.num_attention_heads);
  c.max_position_embeddings = r.positive_int("max_position_embeddings", 2048);
}

std::optional<RopeScaling> read_rope_scaling(const FieldReader& top) {
  auto e = top.find("rope_scaling");
  if (!e) return std::nullopt;
  object obj;
  if (e->get_object().get(obj)) top.fail_type("rope_scaling", "an object or null", *e);
  FieldReader r(obj, top.source(), "rope_scaling.");
  // transformers reads "rope_type" and falls back to the older key "type".
  std::string_view type_key = r.find("rope_type") ? "rope_type" : "type";
  if (!r.find(type_key)) r.fail(ErrorCode::missing_field, "rope_type", "is missing");
  RopeScaling s;
  s.rope_type = r.to_string(*r.find(type_key), type_key);
  if (s.rope_type == "default") return std::nullopt;
  if (s.rope_type != "llama3")
    r.fail(ErrorCode::unsupported_architecture, type_key,
           "is '" + s.rope_type + "'; specd supports only 'llama3' or 'default'");
  // transformers requires all four llama3 parameters; so does specd.
  s.factor = r.to_double(r.require("factor"), "factor");
  s.low_freq_factor = r.to_double(r.require("low_freq_factor"), "low_freq_factor");
  s.high_freq_factor = r.to_double(r.require("high_freq_factor"), "high_freq_factor");
  s.original_max_position_embeddings = r.positive_int("original_max_position_embeddings");
  if (!(s.factor > 0) || !std::isfinite(s.factor))
    r.fail(ErrorCode::bad_value, "factor", "must be a positive finite number");
  if (!(s.low_freq_factor > 0) || !std::isfinite(s.low_freq_factor))
    r.fail(ErrorCode::bad_value, "low_freq_factor", "must be a positive finite number");
  // The llama3 smoothing divides by (high - low).
  if (!(s.high_freq_factor > s.low_freq_factor) || !std::isfinite(s.high_freq_factor))
    r.fail(ErrorCode::bad_value, "high_freq_factor", "must be finite and greater than low_freq_factor");
  return s;
}

void read_tokens_and_misc(const FieldReader& r, ModelConfig& c) {
  c.rms_norm_eps = r.positive_double("rms_norm_eps", 1e-6);
  c.rope_theta = r.positive_double("rope_theta", 10000.0);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  // Newer transformers write "dtype" instead of "torch_dtype".
  c.torch_dtype = r.find("torch_dtype") ? r.text("torch_dtype", "") : r.text("dtype", "");
  if (auto bos = r.find("bos_token_id")) c.bos_token_id = r.to_token_id(*bos, "bos_token_id");
  auto eos = r.find("eos_token_id");
  if (!eos) return;
  simdjson::dom::array ids;
  if (eos->get_array().get(ids) != simdjson::SUCCESS) {
    c.eos_token_ids.push_back(r.to_token_id(*eos, "eos_token_id"));
    return;
  }
  for (element id : ids) c.eos_token_ids.push_back(r.to_token_id(id, "eos_token_id"));
}

boost::json::value rope_scaling_json(const std::optional<RopeScaling>& s) {
  if (!s) return nullptr;
  return boost::json::object{{"factor", s->factor},
                             {"high_freq_factor", s->high_freq_factor},
                             {"low_freq_factor", s->low_freq_factor},
                             {"original_max_position_embeddings", s->original_max_position_embeddings},
                             {"rope_type", s->rope_type}};
}

// One id as a number, several as a list, none as null (what transformers writes).
boost::json::value eos_json(const std::vector<int32_t>& ids) {
  if (ids.empty()) return nullptr;
  if (ids.size() == 1) return ids[0];
  return boost::json::array(ids.begin(), ids.end());
}

}  // namespace

const char* model_type_of(std::string_view architecture) {
  if (architecture == "LlamaForCausalLM") return "llama";
  if (architecture == "Qwen2ForCausalLM") return "qwen2";
  if (architecture == "Qwen3ForCausalLM") return "qwen3";
  return nullptr;
}

ModelConfig parse_model_config(std::string_view json_text, const std::string& source_name) {
  simdjson::dom::parser parser;
  element root;
  if (auto err = parser.parse(json_text.data(), json_text.size()).get(root))
    throw SpecdError(ErrorCode::malformed_json, source_name + ": invalid JSON: " + simdjson::error_message(err));
  object obj;
  if (root.get_object().get(obj))
    throw SpecdError(ErrorCode::malformed_json,
                     source_name + ": expected a JSON object at the top level, got " + json_type_name(root));
  FieldReader r(obj, source_name);
  ModelConfig c;
  read_architecture(r, c);
  read_sizes(r, c);
  c.rope_scaling = read_rope_scaling(r);
  read_tokens_and_misc(r, c);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_json_path) {
  const std::string name = config_json_path.string();
  std::error_code ec;
  if (!std::filesystem::exists(config_json_path, ec))
    throw SpecdError(ErrorCode::missing_file, name + ": no such file");
  if (!std::filesystem::is_regular_file(config_json_path, ec))
    throw SpecdError(ErrorCode::missing_file, name + ": not a regular file");
  return parse_model_config(read_whole_file(config_json_path, "model config"), name);
}

std::string model_config_to_json(const ModelConfig& c) {
  boost::json::object o{{"architectures", boost::json::array{c.architecture}},
                        {"bos_token_id", c.bos_token_id ? boost::json::value(*c.bos_token_id) : nullptr},
                        {"eos_token_id", eos_json(c.eos_token_ids)},
                        {"head_dim", c.head_dim},
                        {"hidden_act", c.hidden_act},
                        {"hidden_size", c.hidden_size},
                        {"intermediate_size", c.intermediate_size},
                        {"max_position_embeddings", c.max_position_embeddings},
                        {"model_type", c.model_type},
                        {"num_attention_heads", c.num_attention_heads},
                        {"num_hidden_layers", c.num_hidden_layers},
                        {"num_key_value_heads", c.num_key_value_heads},
                        {"rms_norm_eps", c.rms_norm_eps},
                        {"rope_scaling", rope_scaling_json(c.rope_scaling)},
                        {"rope_theta", c.rope_theta},
                        {"tie_word_embeddings", c.tie_word_embeddings}};
  if (!c.torch_dtype.empty()) o["torch_dtype"] = c.torch_dtype;
  o["vocab_size"] = c.vocab_size;
  return serialize_json_indented(o) + "\n";
}

}  // namespace specd
