#include "tools/loadgen/json_print.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cmath>

namespace specd::loadgen {

namespace {

void append(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(key));
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
    case boost::json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";
        break;
      }
      char buf[64];
      const auto result = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, result.ptr);
      break;
    }
    default:
      out += boost::json::serialize(v);
  }
}

}  // namespace

std::string to_readable_json(const boost::json::value& value) {
  std::string out;
  append(out, value);
  return out;
}

}  // namespace specd::loadgen
