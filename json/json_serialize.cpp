#include "json/json_serialize.hpp"

#include <boost/json/serializer.hpp>

#include <charconv>

#include "json/json_number.hpp"

namespace specd {

namespace {

namespace json = boost::json;

// Appends a value's text to one string; indent 0 is the compact layout.
class TextWriter {
 public:
  TextWriter(std::string& out, int indent) : out_(out), indent_(indent) {}

  void value(const json::value& v, int depth) {
    switch (v.kind()) {
      case json::kind::object:
        object(v.get_object(), depth);
        break;
      case json::kind::array:
        array(v.get_array(), depth);
        break;
      case json::kind::string:
        string(v.get_string());
        break;
      case json::kind::double_:
        if (indent_ > 0)
          append_python_float(out_, v.get_double());
        else
          append_json_number(out_, v.get_double());
        break;
      case json::kind::int64:
        integer(v.get_int64());
        break;
      case json::kind::uint64:
        integer(v.get_uint64());
        break;
      case json::kind::bool_:
        out_ += v.get_bool() ? "true" : "false";
        break;
      case json::kind::null:
        out_ += "null";
        break;
    }
  }

 private:
  void object(const json::object& o, int depth) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, member] : o) {
      separate(first, depth + 1);
      string(key);
      out_ += indent_ > 0 ? ": " : ":";
      value(member, depth + 1);
    }
    close(o.empty(), depth, '}');
  }

  void array(const json::array& a, int depth) {
    out_ += '[';
    bool first = true;
    for (const auto& item : a) {
      separate(first, depth + 1);
      value(item, depth + 1);
    }
    close(a.empty(), depth, ']');
  }

  // Before each element: a comma after the first, and the element's own line when indented.
  void separate(bool& first, int depth) {
    if (!first) out_ += ',';
    first = false;
    newline(depth);
  }

  void close(bool empty, int depth, char bracket) {
    if (!empty) newline(depth);  // Python writes [] and {} on one line
    out_ += bracket;
  }

  void newline(int depth) {
    if (indent_ == 0) return;
    out_ += '\n';
    out_.append(static_cast<size_t>(depth * indent_), ' ');
  }

  void string(json::string_view s) {
    strings_.reset(s);
    char buffer[256];
    while (!strings_.done()) {
      const json::string_view piece = strings_.read(buffer);
      out_.append(piece.data(), piece.size());
    }
  }

  template <class Integer>
  void integer(Integer n) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, n);
    out_.append(buffer, end);
  }

  std::string& out_;
  const int indent_;
  json::serializer strings_;  // Boost's escaping, one serializer for the whole value
};

}  // namespace

void append_json(std::string& out, const boost::json::value& value) { TextWriter(out, 0).value(value, 0); }

std::string serialize_json(const boost::json::value& value) {
  std::string out;
  out.reserve(256);  // a burst frame's size: no regrowth on the hot path
  append_json(out, value);
  return out;
}

std::string serialize_json_indented(const boost::json::value& value) {
  std::string out;
  TextWriter(out, 2).value(value, 0);
  return out;
}

}  // namespace specd
