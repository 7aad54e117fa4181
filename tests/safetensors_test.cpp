// Tests for engine/checkpoint/safetensors: write/read round trips, F16/BF16 conversions against
// known bit patterns, and every kind of corrupt file (error code and file name).
#include "engine/checkpoint/safetensors.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

#include "engine/base/errors.hpp"
#include "tests/support/temp_dir.hpp"

using specd::testing::TempDir;

using namespace specd;

namespace {

// A fresh directory under the system temp dir, removed with its contents on scope exit.

template <typename T>
std::span<const std::byte> as_bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

std::vector<uint16_t> to_bits16(const std::vector<std::byte>& bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

uint16_t to_f16(float f) { return to_bits16(convert_from_float32(std::span<const float>(&f, 1), DType::F16))[0]; }
uint16_t to_bf16(float f) { return to_bits16(convert_from_float32(std::span<const float>(&f, 1), DType::BF16))[0]; }

float widen(uint16_t bits, DType dtype) {
  TensorView t{"t", dtype, {1}, reinterpret_cast<const std::byte*>(&bits), 2};
  float out = 0;
  convert_to_float32(t, &out);
  return out;
}

// Writes a file with the given header text and data bytes; header_length overrides N.
void write_raw(const std::filesystem::path& path, const std::string& header, size_t data_bytes,
               std::optional<uint64_t> header_length = std::nullopt) {
  const uint64_t n = header_length.value_or(header.size());
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\x01');
}

void check_open_error(const std::filesystem::path& path, ErrorCode code, std::initializer_list<std::string> mentions) {
  try {
    SafetensorsFile::open(path);
    FAIL("expected SpecdError ", error_code_name(code));
  } catch (const SpecdError& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(e.code() == code, what);
    CHECK_MESSAGE(what.find(path.string()) != std::string::npos, what);
    for (const auto& m : mentions) CHECK_MESSAGE(what.find(m) != std::string::npos, "'", m, "' not in ", what);
  }
}

}  // namespace

TEST_CASE("F32, F16 and BF16 tensors round-trip with exact bytes, shapes and order-independent names") {
  TempDir dir;
  const std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc100, 0x7bff, 0x0001};
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc020, 0x7f80};
  const std::vector<float> scalar = {42.0f};
  const std::vector<TensorToWrite> tensors = {
      {"model.layers.0.weight", DType::F32, {2, 3}, as_bytes(f32)},
      {"half", DType::F16, {4}, as_bytes(f16)},
      {"brain", DType::BF16, {1, 3, 1}, as_bytes(bf16)},
      {"empty", DType::F32, {0, 5}, {}},
      {"scalar", DType::F32, {}, as_bytes(scalar)},
  };
  const auto path = dir.path / "model.safetensors";
  write_safetensors(path, tensors);

  SafetensorsFile file = SafetensorsFile::open(path);
  CHECK(file.path() == path);
  CHECK(file.names() == std::vector<std::string>{"brain", "empty", "half", "model.layers.0.weight", "scalar"});
  CHECK(file.metadata().empty());
  for (const auto& expected : tensors) {
    CAPTURE(expected.name);
    REQUIRE(file.contains(expected.name));
    const TensorView& t = file.tensor(expected.name);
    CHECK(t.name == expected.name);
    CHECK(t.dtype == expected.dtype);
    CHECK(t.shape == expected.shape);
    REQUIRE(t.nbytes == expected.bytes.size());
    CHECK((t.nbytes == 0 || std::memcmp(t.data, expected.bytes.data(), t.nbytes) == 0));
  }
  std::vector<float> widened(4);
  convert_to_float32(file.tensor("half"), widened.data());
  CHECK(widened == std::vector<float>{1.0f, -2.5f, 65504.0f, 0x1p-24f});
  CHECK_FALSE(file.contains("absent"));
}

TEST_CASE("the header is padded to 8 bytes, data follows in the given order, the length is little-endian") {
  TempDir dir;
  const std::vector<float> a = {1.0f}, b = {2.0f, 3.0f};
  const std::vector<TensorToWrite> tensors = {{"z", DType::F32, {1}, as_bytes(a)}, {"a", DType::F32, {2}, as_bytes(b)}};
  write_safetensors(dir.path / "x.safetensors", tensors);
  std::ifstream in(dir.path / "x.safetensors", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  CHECK(n % 8 == 0);
  REQUIRE(bytes.size() == 8 + n + 12);
  const std::string header = bytes.substr(8, n);
  CHECK(header.find("\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}") != std::string::npos);
  CHECK(header.find("\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}") != std::string::npos);
  CHECK(header.find_last_not_of(' ') == header.find_last_of('}'));
  float first = 0;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  CHECK(first == 1.0f);
  CHECK(std::filesystem::directory_iterator(dir.path)->path().filename() == "x.safetensors");  // no temp left
}

TEST_CASE("metadata round-trips, including characters that need JSON escapes") {
  TempDir dir;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "quote \" backslash \\ newline \n tab \t"}, {"unicode", "caf\xc3\xa9"}};
  const std::vector<float> v = {1.0f};
  const std::vector<TensorToWrite> tensors = {{"w\"eird", DType::F32, {1}, as_bytes(v)}};
  write_safetensors(dir.path / "m.safetensors", tensors, metadata);
  SafetensorsFile file = SafetensorsFile::open(dir.path / "m.safetensors");
  CHECK(file.metadata() == metadata);
  CHECK(file.contains("w\"eird"));
}

TEST_CASE("writing replaces an existing file and a moved-from file leaves its views valid") {
  TempDir dir;
  const auto path = dir.path / "w.safetensors";
  const std::vector<float> one = {1.0f}, two = {2.0f, 2.0f};
  write_safetensors(path, std::vector<TensorToWrite>{{"a", DType::F32, {1}, as_bytes(one)}});
  SafetensorsFile old_file = SafetensorsFile::open(path);
  write_safetensors(path, std::vector<TensorToWrite>{{"b", DType::F32, {2}, as_bytes(two)}});
  SafetensorsFile moved = std::move(old_file);  // still maps the replaced file's inode
  float a = 0;
  convert_to_float32(moved.tensor("a"), &a);
  CHECK(a == 1.0f);
  SafetensorsFile fresh = SafetensorsFile::open(path);
  CHECK(fresh.names() == std::vector<std::string>{"b"});
  fresh = std::move(moved);
  CHECK(fresh.names() == std::vector<std::string>{"a"});
}

TEST_CASE("the writer rejects bytes that do not fit the shape and repeated names") {
  TempDir dir;
  const std::vector<float> v = {1.0f, 2.0f, 3.0f};
  const auto path = dir.path / "bad.safetensors";
  auto attempt = [&](std::vector<TensorToWrite> tensors) { write_safetensors(path, tensors); };
  CHECK_THROWS_WITH_AS(attempt({{"w", DType::F32, {2, 2}, as_bytes(v)}}), doctest::Contains("'w'"), SpecdError);
  CHECK_THROWS_WITH_AS(attempt({{"w", DType::F32, {-3}, as_bytes(v)}}), doctest::Contains("shape_mismatch"),
                       SpecdError);
  CHECK_THROWS_WITH_AS(attempt({{"w", DType::F32, {3}, as_bytes(v)}, {"w", DType::F32, {3}, as_bytes(v)}}),
                       doctest::Contains("invalid_argument"), SpecdError);
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_THROWS_WITH_AS(write_safetensors(dir.path / "no" / "dir.safetensors", {}), doctest::Contains("missing_file"),
                       SpecdError);
}

TEST_CASE("F16 conversion matches known bit patterns") {
  CHECK(to_f16(1.0f) == 0x3c00);
  CHECK(to_f16(-2.5f) == 0xc100);
  CHECK(to_f16(65504.0f) == 0x7bff);
  CHECK(to_f16(65519.0f) == 0x7bff);  // below the midpoint to 65536
  CHECK(to_f16(65520.0f) == 0x7c00);  // midpoint rounds to even: inf
  CHECK(to_f16(1e-8f) == 0x0000);     // below half the smallest subnormal
  CHECK(to_f16(-1e-8f) == 0x8000);    // keeps the sign of zero
  CHECK(to_f16(0x1p-25f) == 0x0000);  // exactly half the smallest subnormal: ties to even
  CHECK(to_f16(0x1.000002p-25f) == 0x0001);
  CHECK(to_f16(0x1p-24f) == 0x0001);      // smallest subnormal
  CHECK(to_f16(0x3p-25f) == 0x0002);      // 1.5 subnormal units: ties to even
  CHECK(to_f16(0x1.ff8p-15f) == 0x03ff);  // largest subnormal
  CHECK(to_f16(0x1.ffcp-15f) == 0x0400);  // largest subnormal plus half rounds up to the smallest normal
  CHECK(to_f16(6.1035156e-05f) == 0x0400);
  CHECK(to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(to_f16(1e10f) == 0x7c00);
  const uint16_t nan = to_f16(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(to_f16(1.0f + 0x1p-11f) == 0x3c00);             // tie between 0x3c00 and 0x3c01: even
  CHECK(to_f16(1.0f + 0x3p-11f) == 0x3c02);             // tie between 0x3c01 and 0x3c02: even
  CHECK(to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // just above the tie
  CHECK(to_f16(2047.0f + 0.5f) == 0x67ff + 1);          // 2047.5 ties up to 2048 (even)
}

TEST_CASE("F16 widening is exact, including subnormals, signed zero, inf and NaN") {
  CHECK(widen(0x3c00, DType::F16) == 1.0f);
  CHECK(widen(0xc100, DType::F16) == -2.5f);
  CHECK(widen(0x7bff, DType::F16) == 65504.0f);
  CHECK(widen(0x0001, DType::F16) == 0x1p-24f);
  CHECK(widen(0x03ff, DType::F16) == 0x1.ff8p-15f);
  CHECK(widen(0x8001, DType::F16) == -0x1p-24f);
  CHECK(std::signbit(widen(0x8000, DType::F16)));
  CHECK(widen(0x7c00, DType::F16) == std::numeric_limits<float>::infinity());
  CHECK(widen(0xfc00, DType::F16) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(widen(0x7e00, DType::F16)));
  CHECK(std::isnan(widen(0x7c01, DType::F16)));
}

TEST_CASE("BF16 conversion matches known bit patterns and widens exactly") {
  CHECK(to_bf16(1.0f) == 0x3f80);
  CHECK(to_bf16(-2.5f) == 0xc020);
  CHECK(to_bf16(65504.0f) == 0x4780);  // 0x477fe000 rounds up to 65536
  CHECK(to_bf16(1e-8f) == 0x322c);     // 0x322bcc77 rounds up
  CHECK(to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // overflows to inf
  CHECK(std::isnan(widen(to_bf16(std::numeric_limits<float>::quiet_NaN()), DType::BF16)));
  CHECK(std::isnan(widen(to_bf16(std::bit_cast<float>(0x7f800001u)), DType::BF16)));  // payload only in low bits
  CHECK(to_bf16(1.0f + 0x1p-8f) == 0x3f80);                                           // tie: even
  CHECK(to_bf16(1.0f + 0x3p-8f) == 0x3f82);                                           // tie: even
  CHECK(to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);                                // above the tie
  CHECK(widen(0x3f80, DType::BF16) == 1.0f);
  CHECK(widen(0xc020, DType::BF16) == -2.5f);
  CHECK(widen(0x0001, DType::BF16) == std::bit_cast<float>(0x00010000u));
}

TEST_CASE("every F16 and BF16 value survives widen-then-narrow unchanged") {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    for (DType dtype : {DType::F16, DType::BF16}) {
      const float f = widen(uint16_t(bits), dtype);
      const uint16_t back = dtype == DType::F16 ? to_f16(f) : to_bf16(f);
      if (std::isnan(f)) {
        REQUIRE(std::isnan(widen(back, dtype)));
      } else {
        REQUIRE_MESSAGE(back == bits, dtype_name(dtype), " bits ", bits);
      }
    }
  }
}

#ifdef __FLT16_MAX__
TEST_CASE("F16 narrowing agrees with the compiler's _Float16 on random floats") {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    REQUIRE_MESSAGE(to_f16(f) == std::bit_cast<uint16_t>(h), "float bits ", std::bit_cast<uint32_t>(f));
  }
}
#endif

TEST_CASE("opening a missing, short or truncated file names the file and the sizes") {
  TempDir dir;
  check_open_error(dir.path / "absent.safetensors", ErrorCode::missing_file, {});

  const auto four = dir.path / "four.safetensors";
  std::ofstream(four, std::ios::binary) << "abcd";
  check_open_error(four, ErrorCode::truncated_file, {"4 bytes"});

  const auto long_header = dir.path / "long_header.safetensors";
  write_raw(long_header, "{}", 0, 1000);
  check_open_error(long_header, ErrorCode::truncated_file, {"1000", "1008", "10 bytes"});

  const auto truncated = dir.path / "truncated.safetensors";
  const std::vector<float> v(16, 1.0f);
  write_safetensors(truncated, std::vector<TensorToWrite>{{"w", DType::F32, {4, 4}, as_bytes(v)}});
  const auto full = std::filesystem::file_size(truncated);
  std::filesystem::resize_file(truncated, full - 10);
  check_open_error(truncated, ErrorCode::truncated_file, {"'w'", std::to_string(full), std::to_string(full - 10)});
}

TEST_CASE("opening a file with a corrupt header gives the right code naming file and tensor") {
  TempDir dir;
  const auto path = dir.path / "corrupt.safetensors";
  write_raw(path, "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offs", 64);
  check_open_error(path, ErrorCode::malformed_json, {"JSON"});

  write_raw(path, R"({"q": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]}})", 4);
  check_open_error(path, ErrorCode::unsupported_dtype, {"'q'", "I8"});
  write_raw(path, R"({"q": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8);
  check_open_error(path, ErrorCode::unsupported_dtype, {"'q'", "F64"});

  write_raw(path, R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24);
  check_open_error(path, ErrorCode::shape_mismatch, {"'w'", "24", "20"});
  write_raw(path, R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 24]}})", 24);
  check_open_error(path, ErrorCode::shape_mismatch, {"'w'", "BF16"});

  write_raw(path, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 16);
  check_open_error(path, ErrorCode::truncated_file, {"'w'", "[8, 24]"});

  write_raw(path, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})", 16);
  check_open_error(path, ErrorCode::bad_value, {"'w'", "data_offsets"});
  write_raw(path, R"({"w": {"dtype": "F32", "data_offsets": [0, 16]}})", 16);
  check_open_error(path, ErrorCode::missing_field, {"'w'", "shape"});
  write_raw(path, R"({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", 16);
  check_open_error(path, ErrorCode::bad_value, {"'w'", "shape"});
  write_raw(path, R"({"__metadata__": {"n": 1}})", 0);
  check_open_error(path, ErrorCode::bad_value, {"__metadata__"});
}

TEST_CASE("overlapping and out-of-order offsets are accepted; asking for a missing tensor names it") {
  TempDir dir;
  const auto path = dir.path / "overlap.safetensors";
  write_raw(path,
            R"({"b": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]},)"
            R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}   )",
            8);
  SafetensorsFile file = SafetensorsFile::open(path);
  CHECK(file.names() == std::vector<std::string>{"a", "b"});
  CHECK(file.tensor("b").data == file.tensor("a").data + 4);
  try {
    file.tensor("lm_head.weight");
    FAIL("expected missing_tensor");
  } catch (const SpecdError& e) {
    CHECK(e.code() == ErrorCode::missing_tensor);
    CHECK(std::string(e.what()).find("lm_head.weight") != std::string::npos);
    CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
  }
}
