// engine/checkpoint/sharded_writer: streamed, chunked writing split into HF-style shards.
#include "tests/support/doctest_torch.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include "engine/base/errors.hpp"
#include "engine/checkpoint/sharded_writer.hpp"
#include "engine/checkpoint/weight_files.hpp"
#include "tests/support/tiny_models.hpp"

using namespace specd;
using specd::testing::TempDir;

namespace {

// Element k of tensor t is t * 1000 + k (exact in float32 for these sizes).
void fill_index(const TensorSpec& spec, int64_t first, std::span<float> out) {
  const float base = spec.name == "a" ? 0.0f : spec.name == "b" ? 1000.0f : 2000.0f;
  for (size_t i = 0; i < out.size(); ++i) out[i] = base + static_cast<float>((first + int64_t(i)) % 1000);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("tensors are split into shards named as transformers names them, with an index") {
  TempDir dir;
  // 400 + 400 + 100 floats of 4 bytes against a 2000-byte limit: [a], [b, c].
  const std::vector<TensorSpec> specs{{"a", {20, 20}}, {"b", {400}}, {"c", {10, 10}}};
  const auto written = write_weights_streaming(dir.path, specs, DType::F32, 2000, fill_index);
  REQUIRE(written.files.size() == 2);
  CHECK(written.files[0].filename() == "model-00001-of-00002.safetensors");
  CHECK(written.files[1].filename() == "model-00002-of-00002.safetensors");
  CHECK(written.tensor_bytes == 3600);
  const auto map = parse_weight_index(read_text(dir.path / kWeightIndexFile), "index");
  CHECK(map.at("a") == "model-00001-of-00002.safetensors");
  CHECK(map.at("b") == "model-00002-of-00002.safetensors");
  CHECK(map.at("c") == "model-00002-of-00002.safetensors");
  CHECK(read_text(dir.path / kWeightIndexFile).find("\"total_size\": 3600") != std::string::npos);
  const WeightFiles files = WeightFiles::open(dir.path);
  float value = 0;
  std::memcpy(&value, files.tensor("c").data + 4 * 99, 4);
  CHECK(value == 2099.0f);
  CHECK(files.tensor("a").shape == std::vector<int64_t>{20, 20});
}

TEST_CASE("one shard is a plain model.safetensors and replaces a stale index") {
  TempDir dir;
  const std::vector<TensorSpec> specs{{"a", {20, 20}}, {"b", {400}}};
  write_weights_streaming(dir.path, specs, DType::F32, 100, fill_index);
  REQUIRE(std::filesystem::exists(dir.path / kWeightIndexFile));
  const auto written = write_weights_streaming(dir.path, specs, DType::BF16, 1 << 20, fill_index);
  REQUIRE(written.files.size() == 1);
  CHECK(written.files[0].filename() == "model.safetensors");
  CHECK_FALSE(std::filesystem::exists(dir.path / kWeightIndexFile));
  const WeightFiles files = WeightFiles::open(dir.path);
  CHECK(files.tensor("b").dtype == DType::BF16);
  CHECK(files.tensor("b").nbytes == 800);
}

TEST_CASE("a tensor longer than one chunk is streamed in order, without gaps") {
  TempDir dir;
  const int64_t n = (int64_t(1) << 22) + 5;  // the writer's chunk plus a few
  const std::vector<TensorSpec> specs{{"a", {n}}};
  write_weights_streaming(dir.path, specs, DType::F32, uint64_t(1) << 30, fill_index);
  const WeightFiles files = WeightFiles::open(dir.path);
  const TensorView& v = files.tensor("a");
  REQUIRE(v.nbytes == static_cast<size_t>(n) * 4);
  std::vector<float> got(static_cast<size_t>(n));
  std::memcpy(got.data(), v.data, v.nbytes);
  int64_t wrong = 0;
  for (int64_t k = 0; k < n; ++k) wrong += got[k] != static_cast<float>(k % 1000);
  CHECK(wrong == 0);
}

TEST_CASE("repeated or reserved tensor names are invalid_argument") {
  TempDir dir;
  const std::vector<TensorSpec> twice{{"a", {2}}, {"a", {2}}};
  CHECK_THROWS_AS(write_weights_streaming(dir.path, twice, DType::F32, 100, fill_index), SpecdError);
  const std::vector<TensorSpec> reserved{{"__metadata__", {2}}};
  CHECK_THROWS_AS(write_weights_streaming(dir.path, reserved, DType::F32, 100, fill_index), SpecdError);
}

TEST_CASE("a tensor's own dtype overrides the writer's default, and the loader reads both") {
  TempDir dir;
  const std::vector<TensorSpec> specs{{"a", {20, 20}}, {"b", {400}, DType::F32}, {"c", {10, 10}}};
  const auto written = write_weights_streaming(dir.path, specs, DType::F16, 1 << 20, fill_index);
  CHECK(written.tensor_bytes == 400 * 2 + 400 * 4 + 100 * 2);
  const WeightFiles files = WeightFiles::open(dir.path);
  CHECK(files.tensor("a").dtype == DType::F16);
  CHECK(files.tensor("b").dtype == DType::F32);
  CHECK(files.tensor("c").dtype == DType::F16);
  std::vector<float> b(400), c(100);
  convert_to_float32(files.tensor("b"), b.data());
  convert_to_float32(files.tensor("c"), c.data());
  CHECK(b[399] == 1399.0f);
  CHECK(c[98] == 2098.0f);  // even: F16 steps by 2 above 2048
}

TEST_CASE("names that need escaping in JSON are written escaped and read back whole") {
  TempDir dir;
  const std::vector<TensorSpec> specs{{"a\"q", {4}}, {"b\\s", {4}}};
  write_weights_streaming(dir.path, specs, DType::F32, 20, fill_index);  // two shards and an index
  const auto map = parse_weight_index(read_text(dir.path / kWeightIndexFile), "index");
  CHECK(map.at("a\"q") == "model-00001-of-00002.safetensors");
  CHECK(map.at("b\\s") == "model-00002-of-00002.safetensors");
  const WeightFiles files = WeightFiles::open(dir.path);
  CHECK(files.tensor("b\\s").shape == std::vector<int64_t>{4});
}
