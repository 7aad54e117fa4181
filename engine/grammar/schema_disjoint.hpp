#pragma once
// Whether two JSON schemas can match one value, for oneOf: a grammar accepts what any
// branch accepts, so oneOf compiles exactly only where no value matches two branches.
// Decided conservatively from what discriminated unions use (Pydantic, TypeScript
// generators): different types, different const/enum values, or a property both
// require whose schemas are disjoint (a "kind" const). Plain functions; any thread.
#include <simdjson.h>

#include <functional>
#include <string_view>

namespace specd::grammar {

// The schema a local "$ref" (#/...) points at; throws for one that points nowhere.
using ResolveRef = std::function<simdjson::dom::element(std::string_view ref)>;

// True only when no JSON value matches both schemas; false when they may overlap or
// when the rules above cannot tell.
bool provably_disjoint(simdjson::dom::element a, simdjson::dom::element b, const ResolveRef& resolve);

}  // namespace specd::grammar
