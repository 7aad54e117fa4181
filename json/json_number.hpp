#pragma once
// How the project writes a double in JSON, in one place (json_serialize uses it).
//
// append_json_number: the shortest digits that read back as the same double, laid out
// as JavaScript's JSON.stringify does, so a browser, node and a person read the same
// text: 1.5935168988790087, 0.1, 123456789, 0.000001, 1e-7, 1e+21. Plain decimals from
// 1e-6 up to 1e21, an exponent outside that range (no 300-digit strings); -0 as 0;
// non-finite values, which JSON cannot carry, as null.
//
// append_python_float: the same digits laid out as Python's repr of a float, which is
// what Hugging Face's config.json files hold ("500000.0", "0.02", "1e-05"): a point or an
// exponent always, so Python reads a float back and not an int. Non-finite as null.
#include <string>

namespace specd {

void append_json_number(std::string& out, double value);
void append_python_float(std::string& out, double value);

// `value` rounded to `decimals` places, for a figure whose further digits are noise: its
// shortest digits then print no more places than that ("12.3", not "12.299999713").
double round_to(double value, int decimals);

}  // namespace specd
