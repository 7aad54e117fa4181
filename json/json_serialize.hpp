#pragma once
// The one way the project turns a Boost.JSON value into text (the CLI's --json output,
// loadgen's report and request bodies, the Chrome trace files): compact, members in
// their insertion order, doubles through append_json_number ("1.5935168988790087", not
// Boost 1.81's "1.5935168988790087E0"), integers as integers.
#include <boost/json/value.hpp>

#include <string>

namespace specd {

std::string serialize_json(const boost::json::value& value);

}  // namespace specd
