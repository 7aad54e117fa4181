#pragma once
// The one way the project turns a Boost.JSON value into text (the gateway's frames and
// bodies, the CLI's --json output, loadgen's report and request bodies, the Chrome
// trace files, config.json and safetensors headers). Members keep their insertion
// order; strings are escaped by Boost.JSON's serializer; integers print as integers.
#include <boost/json/value.hpp>

#include <string>

namespace specd {

// Compact text, doubles through append_json_number ("1.5935168988790087", not Boost
// 1.81's "1.5935168988790087E0").
std::string serialize_json(const boost::json::value& value);
// The same text appended to `out` (after a prefix such as SSE's "data: ").
void append_json(std::string& out, const boost::json::value& value);

// The layout of Python's json.dumps(value, indent=2), doubles through
// append_python_float: how transformers writes config.json, so a saved model directory
// reads as one Hugging Face wrote (no trailing newline).
std::string serialize_json_indented(const boost::json::value& value);

}  // namespace specd
