#include "engine/jinja/json_input.hpp"

#include <simdjson.h>

#include "engine/base/errors.hpp"

namespace specd::jinja {

namespace {

Value convert(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return Value(nullptr);
    case simdjson::dom::element_type::BOOL:
      return Value(bool(e.get_bool()));
    case simdjson::dom::element_type::INT64:
      return Value(int64_t(e.get_int64()));
    case simdjson::dom::element_type::UINT64:
      return Value(double(uint64_t(e.get_uint64())));
    case simdjson::dom::element_type::DOUBLE:
      return Value(double(e.get_double()));
    case simdjson::dom::element_type::STRING:
      return Value(std::string_view(e.get_string()));
    case simdjson::dom::element_type::ARRAY: {
      Array items;
      for (simdjson::dom::element x : e.get_array()) items.push_back(convert(x));
      return Value::list(std::move(items));
    }
    case simdjson::dom::element_type::OBJECT: {
      Value d = Value::dict();
      for (auto field : e.get_object()) d.object().set(std::string(field.key), convert(field.value));
      return d;
    }
  }
  return Value(nullptr);
}

}  // namespace

Value value_from_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (auto error = parser.parse(padded).get(root)) {
    throw SpecdError(ErrorCode::malformed_json, std::string("template variables: ") + simdjson::error_message(error));
  }
  return convert(root);
}

}  // namespace specd::jinja
