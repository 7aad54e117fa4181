#pragma once
// The filter functions behind filters.cpp's table, and the helpers they share.
// Internal to engine/jinja: filters.cpp (strings, numbers, the table) and
// sequence_filters.cpp (lists, dicts and generators).
#include <string>

#include "engine/jinja/operations.hpp"
#include "engine/jinja/value.hpp"

namespace specd::jinja::filter {

using FilterFn = Value (*)(Renderer&, Value&, ArgReader&, CallArgs&);

// Jinja2's soft_str: undefined prints as "".
std::string text_of(const Value& v);
// make_attrgetter: "a.b.0" looked up item first, as environment.getitem does.
Value attribute_path(const Value& item, const std::string& path);
// A string lowered for case-insensitive sorting; other values as they are.
Value sort_key(const Value& v, bool case_sensitive);

Value f_default(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_length(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_trim(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_string(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_upper(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_lower(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_safe(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_capitalize(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_title(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_tojson(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_join(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_first(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_last(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_list(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_items(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_dictsort(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_sort(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_min(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_max(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_unique(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_reverse(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_replace(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_int(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_float(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_abs(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_round(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_sum(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_indent(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_wordcount(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_escape(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_pprint(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_attr(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_format(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_map(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_select(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_reject(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_selectattr(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);
Value f_rejectattr(Renderer& renderer, Value& v, ArgReader& r, CallArgs& args);

}  // namespace specd::jinja::filter
