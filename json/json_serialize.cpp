#include "json/json_serialize.hpp"

#include <boost/json/serialize.hpp>

#include "json/json_number.hpp"

namespace specd {

namespace {

void append(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(key);
        out += ':';
        append(out, member);
      }
      out += '}';
      break;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append(out, item);
      }
      out += ']';
      break;
    }
    case boost::json::kind::double_:
      append_json_number(out, v.get_double());
      break;
    default:  // strings (escaped), integers, booleans, null: Boost's text is already plain
      out += boost::json::serialize(v);
  }
}

}  // namespace

std::string serialize_json(const boost::json::value& value) {
  std::string out;
  append(out, value);
  return out;
}

}  // namespace specd
