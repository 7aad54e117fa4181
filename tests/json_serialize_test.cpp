// The project's one way of writing JSON text (json/json_number, json/json_serialize):
// doubles as plain decimals in their shortest round-trip digits, laid out as
// JavaScript's JSON.stringify does; integers as integers; strings escaped; and the
// indented layout of Python's json.dumps for Hugging Face's config.json.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <charconv>
#include <limits>
#include <string>

#include "json/json_number.hpp"
#include "json/json_serialize.hpp"

using specd::serialize_json;
using specd::serialize_json_indented;

namespace {

std::string number(double v) {
  std::string out;
  specd::append_json_number(out, v);
  return out;
}

std::string python_float(double v) {
  std::string out;
  specd::append_python_float(out, v);
  return out;
}

}  // namespace

TEST_CASE("doubles print as plain decimals with the shortest digits that read back") {
  CHECK(number(1.5935168988790087) == "1.5935168988790087");  // Boost 1.81: 1.5935168988790087E0
  CHECK(number(1.5) == "1.5");
  CHECK(number(0.1) == "0.1");
  CHECK(number(-2.25) == "-2.25");
  CHECK(number(123456789.0) == "123456789");
  CHECK(number(100000.0) == "100000");  // std::to_chars alone: 1e+05
  CHECK(number(368.25) == "368.25");
  CHECK(number(0.000001) == "0.000001");
  CHECK(number(1e20) == "100000000000000000000");
}

TEST_CASE("only below 1e-6 and from 1e21 up do doubles take an exponent, as in JavaScript") {
  CHECK(number(1e-7) == "1e-7");
  CHECK(number(-2.5e-9) == "-2.5e-9");
  CHECK(number(1e21) == "1e+21");
  CHECK(number(1.5e300) == "1.5e+300");
  CHECK(number(5e-324) == "5e-324");
}

TEST_CASE("zero, negative zero and non-finite doubles") {
  CHECK(number(0.0) == "0");
  CHECK(number(-0.0) == "0");
  CHECK(number(std::numeric_limits<double>::infinity()) == "null");
  CHECK(number(-std::numeric_limits<double>::infinity()) == "null");
  CHECK(number(std::numeric_limits<double>::quiet_NaN()) == "null");
}

// Read back with std::from_chars, which rounds correctly (Boost 1.81's parser may not).
TEST_CASE("every printed double reads back as the same double") {
  for (double v : {0.1, 1.0 / 3, 2.0 / 3 * 1e-5, 1e-6 * 1.0000000000000002, 9.999999999999999e20, 4.35e-7}) {
    const std::string text = number(v);
    double back = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
    CHECK(ec == std::errc());
    CHECK(end == text.data() + text.size());
    CHECK(back == v);
  }
}

TEST_CASE("a Boost.JSON value prints compact with plain numbers, integers as integers") {
  const boost::json::value v = boost::json::object{
      {"tokens_per_second", 1.5935168988790087},
      {"rate", 0.1},
      {"small", 1e-7},
      {"big", 123456789.0},
      {"n", 3},
      {"neg", -42},
      {"u", std::numeric_limits<uint64_t>::max()},
      {"ok", true},
      {"none", nullptr},
      {"inf", std::numeric_limits<double>::infinity()},
      {"list", boost::json::array{1.5, -2.25, 7, boost::json::array{}, boost::json::object{}}},
      {"nested", boost::json::object{{"a", boost::json::array{0.5, boost::json::object{{"b", 1e21}}}}}}};
  CHECK(serialize_json(v) ==
        R"({"tokens_per_second":1.5935168988790087,"rate":0.1,"small":1e-7,"big":123456789,"n":3,"neg":-42,)"
        R"("u":18446744073709551615,"ok":true,"none":null,"inf":null,"list":[1.5,-2.25,7,[],{}],)"
        R"("nested":{"a":[0.5,{"b":1e+21}]}})");
}

TEST_CASE("strings and keys are escaped") {
  const boost::json::value v = boost::json::object{{"q\"k", "a\"b\\c\nd\te\x01"}, {"", ""}};
  CHECK(serialize_json(v) == R"({"q\"k":"a\"b\\c\nd\te\u0001","":""})");
  CHECK(serialize_json(boost::json::value("plain")) == R"("plain")");
  CHECK(serialize_json(boost::json::value(2.5)) == "2.5");
}

TEST_CASE("append_json appends after a prefix") {
  std::string out = "data: ";
  specd::append_json(out, boost::json::object{{"a", 0.5}});
  CHECK(out == R"(data: {"a":0.5})");
}

// What Python's repr(float) prints, which transformers' config.json files hold.
TEST_CASE("Python floats keep a point or an exponent, with repr's ranges") {
  CHECK(python_float(500000.0) == "500000.0");
  CHECK(python_float(32.0) == "32.0");
  CHECK(python_float(0.02) == "0.02");
  CHECK(python_float(1e-5) == "1e-05");
  CHECK(python_float(1e-4) == "0.0001");
  CHECK(python_float(1e16) == "1e+16");
  CHECK(python_float(1.5e15) == "1500000000000000.0");
  CHECK(python_float(0.0) == "0.0");
  CHECK(python_float(-0.0) == "-0.0");
  CHECK(python_float(std::numeric_limits<double>::quiet_NaN()) == "null");
}

TEST_CASE("the indented layout is Python's json.dumps(indent=2), empty containers on one line") {
  const boost::json::value v =
      boost::json::object{{"architectures", boost::json::array{"LlamaForCausalLM"}},
                          {"eos_token_id", boost::json::array{1, 2}},
                          {"rope_scaling", boost::json::object{{"factor", 32.0}, {"rope_type", "llama3"}}},
                          {"empty_list", boost::json::array{}},
                          {"empty_object", boost::json::object{}},
                          {"rms_norm_eps", 1e-5},
                          {"name", "a\"b"},
                          {"tied", true},
                          {"bos", nullptr}};
  CHECK(serialize_json_indented(v) == R"({
  "architectures": [
    "LlamaForCausalLM"
  ],
  "eos_token_id": [
    1,
    2
  ],
  "rope_scaling": {
    "factor": 32.0,
    "rope_type": "llama3"
  },
  "empty_list": [],
  "empty_object": {},
  "rms_norm_eps": 1e-05,
  "name": "a\"b",
  "tied": true,
  "bos": null
})");
  CHECK(serialize_json_indented(boost::json::value(7)) == "7");
}

TEST_CASE("strings longer than the serializer's buffer come out whole") {
  const std::string long_text(1000, 'x');
  CHECK(serialize_json(boost::json::value(long_text + "\n")) == "\"" + long_text + "\\n\"");
}

TEST_CASE("a figure rounded to its places prints no more digits than those") {
  CHECK(number(specd::round_to(12.299999713, 1)) == "12.3");
  CHECK(number(specd::round_to(0.123456, 4)) == "0.1235");
  CHECK(number(specd::round_to(2.0004, 3)) == "2");
  CHECK(number(specd::round_to(-1.25, 1)) == "-1.3");  // half away from zero, as std::round
}
