#pragma once
// JSON Schema to a byte-level grammar: the subset OpenAI's strict mode, Pydantic and zod
// emit. Supported: type (one or a list; absent means any type), properties, required,
// additionalProperties (false, true or a schema), items (a schema), minItems, maxItems,
// enum, const, minLength, maxLength, pattern (schema_pattern.hpp), anyOf, oneOf (as
// anyOf: the alternatives are not checked for exclusivity), allOf with one member,
// $ref to "#" or a JSON pointer into the document ($defs, definitions), nullable,
// boolean schemas. Annotations (title, description, default, examples, $schema, $id,
// $comment, deprecated, readOnly, writeOnly) and unknown keywords are ignored; siblings
// of $ref too (draft 7). Properties are generated in schema order (declared ones first,
// then any extra ones); documents with another key order are not generated.
//
// Every known validation keyword outside the subset (minimum, format, patternProperties,
// if/then/else, not, uniqueItems: true, tuple items, ...) is refused with SpecdError
// bad_value naming the keyword and its JSON pointer: never a silent fallback to free text.
#include <string_view>

#include "engine/grammar/byte_grammar.hpp"
#include "engine/grammar/grammar_builder.hpp"

namespace specd::grammar {

ByteGrammar compile_json_schema(std::string_view schema_text);

// The same schema as a fragment of a larger grammar (GBNF's %json-schema): its values
// without surrounding whitespace, built into `builder`.
Fragment json_schema_fragment(GrammarBuilder& builder, std::string_view schema_text);

// Any JSON object (response_format json_object), with the same whitespace rules.
ByteGrammar any_json_object_grammar();

}  // namespace specd::grammar
