// engine/checkpoint/weight_files: one model.safetensors or a sharded set behind
// model.safetensors.index.json; every broken index or shard is an error naming it.
#include "tests/support/doctest_torch.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "engine/model/model_files.hpp"
#include "tests/support/sharded_models.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::random_model;
using specd::testing::TempDir;
using specd::testing::tiny_config;
using specd::testing::write_sharded;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

SpecdError open_error(const std::filesystem::path& dir) {
  try {
    WeightFiles::open(dir);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("WeightFiles::open accepted a broken weight set");
  return SpecdError(ErrorCode::invalid_argument, "unreachable");
}

SpecdError index_error(const std::string& json) {
  try {
    parse_weight_index(json, "m/model.safetensors.index.json");
  } catch (const SpecdError& e) {
    CHECK(std::string(e.what()).find("m/model.safetensors.index.json") != std::string::npos);
    return e;
  }
  FAIL("parse_weight_index accepted ", json);
  return SpecdError(ErrorCode::invalid_argument, "unreachable");
}

bool mentions(const SpecdError& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a sharded set opens every shard and finds each tensor in the shard the index names") {
  TempDir dir;
  auto model = random_model(tiny_config(true), 41);
  const auto written = write_sharded(*model, dir.path, DType::F32, 8 << 10);
  REQUIRE(written.files.size() > 1);
  const WeightFiles files = WeightFiles::open(dir.path);
  CHECK(files.shard_count() == written.files.size());
  CHECK(files.source().filename() == kWeightIndexFile);
  uint64_t on_disk = 0;
  for (const auto& f : written.files) on_disk += std::filesystem::file_size(f);
  CHECK(files.total_bytes() == on_disk);
  for (const auto& item : model->named_parameters()) {
    REQUIRE(files.contains(item.key()));
    const TensorView& v = files.tensor(item.key());
    CHECK(v.nbytes == static_cast<size_t>(item.value().numel()) * 4);
    CHECK(std::memcmp(v.data, item.value().data_ptr<float>(), v.nbytes) == 0);
  }
  CHECK_FALSE(files.contains("lm_head.weight"));
  CHECK_THROWS_AS(files.tensor("lm_head.weight"), SpecdError);
}

TEST_CASE("broken sharded sets are errors naming the index, the shard and the tensor") {
  TempDir dir;
  const auto written = write_sharded(*random_model(tiny_config(true), 42), dir.path, DType::F32, 8 << 10);
  REQUIRE(written.files.size() > 2);
  const auto index = dir.path / kWeightIndexFile;
  const std::string good = read_text(index);
  const std::string second = written.files[1].filename().string();

  SUBCASE("a missing shard") {
    std::filesystem::remove(written.files[1]);
    auto e = open_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_file);
    CHECK(mentions(e, second));
    CHECK(mentions(e, kWeightIndexFile));
  }
  SUBCASE("a tensor the index lists in a shard that does not hold it") {
    // Point the embeddings at the second shard.
    const std::string first = written.files[0].filename().string();
    std::string text = std::regex_replace(good, std::regex("\"model.embed_tokens.weight\": \"" + first + "\""),
                                          "\"model.embed_tokens.weight\": \"" + second + "\"");
    REQUIRE(text != good);
    write_text(index, text);
    auto e = open_error(dir.path);
    CHECK(e.code() == ErrorCode::missing_tensor);
    CHECK(mentions(e, "model.embed_tokens.weight"));
    CHECK(mentions(e, second));
  }
  SUBCASE("a tensor the model needs that the index does not list") {
    std::string text =
        std::regex_replace(good, std::regex("\n *\"model.layers.1.post_attention_layernorm.weight\": \"[^\"]*\","), "");
    REQUIRE(text != good);
    write_text(index, text);
    auto e = [&] {
      try {
        load_model(dir.path);
      } catch (const SpecdError& err) {
        return err;
      }
      FAIL("load_model accepted an index without a layer norm");
      return SpecdError(ErrorCode::invalid_argument, "");
    }();
    CHECK(e.code() == ErrorCode::missing_tensor);
    CHECK(mentions(e, "model.layers.1.post_attention_layernorm.weight"));
    CHECK(mentions(e, kWeightIndexFile));
  }
  SUBCASE("a malformed index") {
    write_text(index, good.substr(0, good.size() / 2));
    auto e = open_error(dir.path);
    CHECK(e.code() == ErrorCode::malformed_json);
    CHECK(mentions(e, kWeightIndexFile));
  }
}

TEST_CASE("index JSON: weight_map required, values plain file names beside the index") {
  CHECK(parse_weight_index(R"({"metadata":{"total_size":8},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})",
                           "x")
            .at("b") == "s2.safetensors");
  CHECK(index_error("{").code() == ErrorCode::malformed_json);
  auto missing = index_error(R"({"metadata":{}})");
  CHECK(missing.code() == ErrorCode::missing_field);
  CHECK(mentions(missing, "weight_map"));
  CHECK(index_error(R"({"weight_map":[]})").code() == ErrorCode::bad_value);
  CHECK(index_error(R"({"weight_map":{}})").code() == ErrorCode::bad_value);
  auto number = index_error(R"({"weight_map":{"a":3}})");
  CHECK(number.code() == ErrorCode::bad_value);
  CHECK(mentions(number, "'a'"));
  auto escape = index_error(R"({"weight_map":{"a":"../other/x.safetensors"}})");
  CHECK(escape.code() == ErrorCode::bad_value);
  CHECK(mentions(escape, "../other/x.safetensors"));
}

TEST_CASE("no weights at all names both file names") {
  TempDir dir;
  auto e = open_error(dir.path);
  CHECK(e.code() == ErrorCode::missing_file);
  CHECK(mentions(e, "model.safetensors"));
  CHECK(mentions(e, kWeightIndexFile));
}
