#pragma once
// How the project writes a double in JSON, in one place (the gateway's JsonWriter and
// serialize_json both use it): the shortest digits that read back as the same double,
// laid out as JavaScript's JSON.stringify does, so a browser, node and a person read
// the same text: 1.5935168988790087, 0.1, 123456789, 0.000001, 1e-7, 1e+21. Plain
// decimals from 1e-6 up to 1e21, an exponent outside that range (no 300-digit strings);
// -0 as 0; non-finite values, which JSON cannot carry, as null.
#include <string>

namespace specd {

void append_json_number(std::string& out, double value);

}  // namespace specd
