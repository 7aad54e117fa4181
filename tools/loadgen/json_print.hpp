#pragma once
// Prints a Boost.JSON value with numbers as people read them: doubles in their shortest
// round-trip form ("0.561", "128.4", "0"), not Boost 1.81's exponent form ("5.61E-1").
#include <boost/json/value.hpp>

#include <string>

namespace specd::loadgen {

std::string to_readable_json(const boost::json::value& value);

}  // namespace specd::loadgen
