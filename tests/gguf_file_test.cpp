// The GGUF reader: every metadata value type, tensor infos and data offsets, the
// fixtures llama.cpp wrote (../shared/data/gguf), and refusals of malformed files with
// their error codes: wrong magic, version, truncation at every length, tensors past the
// end or misaligned.
#include "engine/checkpoint/gguf_file.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/base/errors.hpp"
#include "tests/support/gguf_writer.hpp"
#include "tests/support/temp_dir.hpp"

using specd::testing::TempDir;

namespace fs = std::filesystem;
using namespace specd;
using specd::testing::GgufWriter;

namespace {

const fs::path kFixtures = fs::path(SPECD_SOURCE_DIR) / "../shared/data/gguf";

SpecdError open_error(const fs::path& path) {
  try {
    (void)GgufFile::open(path);
  } catch (const SpecdError& e) {
    return e;
  }
  FAIL("GgufFile::open(" << path << ") did not throw");
  return SpecdError(ErrorCode::internal, "unreachable");
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

GgufWriter every_type() {
  GgufWriter w;
  w.u32("a.u32", 4000000000u).i32("a.i32", -7).f32("a.f32", 0.25f).boolean("a.bool", true);
  w.u64("a.u64", uint64_t(1) << 40).string("a.string", "h\xC3\xA9llo");
  w.strings("a.strings", {"x", "", "yz"}).floats("a.floats", {1.5f, -2}).i32s("a.ints", {3, -4, 5});
  w.tensor("t.f32", {4, 2}, 0, std::string(32, '\x01')).tensor("t.q8", {64}, 8, std::string(68, '\x02'));
  return w;
}

}  // namespace

TEST_CASE("every metadata type and tensor info reads back as written") {
  TempDir dir;
  const fs::path path = dir.path / "types.gguf";
  every_type().write(path);
  const GgufFile f = GgufFile::open(path);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.uint_value("a.u32") == 4000000000u);
  CHECK(f.find("a.i32")->type == GgufType::i32);
  CHECK(std::get<int64_t>(f.find("a.i32")->value) == -7);
  CHECK(f.float_value("a.f32") == 0.25);
  CHECK(f.bool_value("a.bool", false));
  CHECK(f.uint_value("a.u64") == (uint64_t(1) << 40));
  CHECK(f.string_value("a.string") == "h\xC3\xA9llo");
  CHECK(f.strings("a.strings") == std::vector<std::string>{"x", "", "yz"});
  CHECK(f.floats("a.floats") == std::vector<float>{1.5f, -2});
  CHECK(f.ints("a.ints") == std::vector<int64_t>{3, -4, 5});
  CHECK(f.uint_value("absent", 9) == 9u);
  REQUIRE(f.tensors().size() == 2);
  const GgufTensor* t = f.find_tensor("t.q8");
  REQUIRE(t != nullptr);
  CHECK(t->dims == std::vector<int64_t>{64});
  CHECK(t->type == 8);
  CHECK(t->nbytes == 68);  // two Q8_0 blocks
  CHECK(t->offset == 32);  // after t.f32's 32 bytes, aligned
  CHECK(static_cast<uint8_t>(t->data[0]) == 2);
  CHECK(f.find_tensor("t.f32")->data == t->data - 32);
  CHECK(ggml_type_name(12) == "Q4_K");
  CHECK(ggml_type_name(99) == "type 99");
}

TEST_CASE("typed reads name the file and the key: missing_field, bad_value") {
  TempDir dir;
  const fs::path path = dir.path / "types.gguf";
  every_type().write(path);
  const GgufFile f = GgufFile::open(path);
  try {
    (void)f.uint_value("llama.block_count");
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::missing_field);
    CHECK(e.message() == path.string() + ": metadata key 'llama.block_count' is missing");
  }
  try {
    (void)f.uint_value("a.string");
    FAIL("no throw");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::bad_value);
    CHECK(e.message() == path.string() + ": metadata key 'a.string' must be a non-negative integer, got string");
  }
  CHECK_THROWS_AS((void)f.strings("a.floats"), SpecdError);
}

TEST_CASE("llama.cpp's fixtures: version 3, their tensors inside the file at aligned offsets") {
  const GgufFile f = GgufFile::open(kFixtures / "target-f16.gguf");
  CHECK(f.version() == 3);
  CHECK(f.string_value("general.architecture") == "llama");
  CHECK(f.uint_value("llama.block_count") == 6);
  CHECK(f.strings("tokenizer.ggml.tokens").size() == 2048);
  CHECK(f.tensors().size() == 56);  // 6 layers x 9, token_embd, output_norm: tied, no output
  CHECK(f.data_offset() % 32 == 0);
  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  REQUIRE(embd != nullptr);
  CHECK(embd->dims == std::vector<int64_t>{384, 2048});
  CHECK(embd->nbytes == 384 * 2048 * 2);
  size_t total = 0;
  for (const GgufTensor& t : f.tensors()) total += t.nbytes;
  CHECK(total <= f.file_bytes() - f.data_offset());
}

TEST_CASE("a file that is not GGUF is bad_value naming the file") {
  TempDir dir;
  const fs::path path = dir.path / "model.gguf";
  std::string bytes = every_type().bytes();
  bytes[0] = 'X';
  GgufWriter::write_bytes(path, bytes);
  SpecdError e = open_error(path);
  CHECK(e.code() == ErrorCode::bad_value);
  CHECK(e.message() == path.string() + ": not a GGUF file (the magic is not \"GGUF\")");

  bytes = every_type().bytes();
  bytes[4] = 1;  // version 1 (uint32 counts) is not read
  GgufWriter::write_bytes(path, bytes);
  e = open_error(path);
  CHECK(e.code() == ErrorCode::bad_value);
  CHECK(e.message() == path.string() + ": GGUF version 1; specd reads versions 2 and 3");

  bytes = every_type().bytes();
  bytes[4] = 0, bytes[7] = 3;  // version 3 written big-endian
  GgufWriter::write_bytes(path, bytes);
  CHECK(open_error(path).message().find("big-endian") != std::string::npos);
  CHECK(open_error(dir.path / "absent.gguf").code() == ErrorCode::missing_file);
}

TEST_CASE("a file cut at any length is a SpecdError, truncated_file past the magic") {
  TempDir dir;
  const fs::path path = dir.path / "cut.gguf";
  const std::string bytes = every_type().bytes();
  const size_t data_start = bytes.size() - 128;  // the tensors: 32 + 68 bytes, each padded to 32
  for (size_t n = 0; n < data_start + 100; ++n) {
    GgufWriter::write_bytes(path, std::string_view(bytes).substr(0, n));
    const SpecdError e = open_error(path);
    INFO("cut at " << n << ": " << e.what());
    CHECK(e.code() == ErrorCode::truncated_file);
    CHECK(e.message().starts_with(path.string() + ": "));
  }
}

TEST_CASE("the fixture truncated in its header or its tensor data names what is cut") {
  TempDir dir;
  const std::string bytes = file_bytes(kFixtures / "target-f16.gguf");
  const fs::path path = dir.path / "target-f16.gguf";
  GgufWriter::write_bytes(path, std::string_view(bytes).substr(0, 1000));
  SpecdError e = open_error(path);
  CHECK(e.code() == ErrorCode::truncated_file);
  CHECK(e.message().find("truncated?") != std::string::npos);
  GgufWriter::write_bytes(path, std::string_view(bytes).substr(0, bytes.size() - 4096));
  e = open_error(path);
  CHECK(e.code() == ErrorCode::truncated_file);
  CHECK(e.message().find("tensor blk.5.attn_v.weight (98304 bytes at data offset 20367360) reaches past the end") !=
        std::string::npos);
}

TEST_CASE("lying counts, misaligned offsets, bad types and duplicates are refused") {
  TempDir dir;
  const fs::path path = dir.path / "bad.gguf";
  GgufWriter w;
  w.u32("x", 1);
  std::string bytes = w.bytes();
  bytes[16] = '\xff';  // the key/value count's low byte: 255 keys in a 64-byte file
  GgufWriter::write_bytes(path, bytes);
  CHECK(open_error(path).code() == ErrorCode::truncated_file);

  GgufWriter huge;
  huge.strings("x", {"a"});
  bytes = huge.bytes();
  bytes[24 + 8 + 1 + 4 + 4] = '\x7f';  // the array count: beyond the file
  GgufWriter::write_bytes(path, bytes);
  CHECK(open_error(path).message().find("key 'x' is an array of") != std::string::npos);

  GgufWriter mis;
  mis.u32("general.alignment", 64).tensor("t", {8}, 0, std::string(32, '\0')).tensor("u", {8}, 0, std::string(32, 0));
  GgufWriter::write_bytes(path, mis.bytes(32));  // offsets on 32, the file says 64
  CHECK(open_error(path).message().find("tensor u starts at data offset 32, not a multiple of the alignment 64") !=
        std::string::npos);

  GgufWriter blocks;
  blocks.tensor("t", {33}, 8, std::string(68, '\0'));
  GgufWriter::write_bytes(path, blocks.bytes());
  CHECK(open_error(path).code() == ErrorCode::shape_mismatch);

  GgufWriter twice;
  twice.u32("k", 1).u32("k", 2);
  GgufWriter::write_bytes(path, twice.bytes());
  CHECK(open_error(path).message().find("metadata key 'k' appears twice") != std::string::npos);

  GgufWriter bad_type;
  bad_type.u32("k", 1);
  bytes = bad_type.bytes();
  bytes[24 + 8 + 1] = 13;  // value type 13 does not exist
  GgufWriter::write_bytes(path, bytes);
  CHECK(open_error(path).message().find("key 'k' has unknown value type 13") != std::string::npos);
}

TEST_CASE("is_gguf_path: the extension decides, in any case") {
  CHECK(is_gguf_path("a/b/model.gguf"));
  CHECK(is_gguf_path("MODEL.GGUF"));
  CHECK_FALSE(is_gguf_path("models/target"));
  CHECK_FALSE(is_gguf_path("models/gguf"));
}
