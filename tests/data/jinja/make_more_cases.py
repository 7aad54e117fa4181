#!/usr/bin/env python3
# Writes more_cases.jsonl: the 56 templates of ../shared/data/templates with eleven more
# conversations each (content parts, parallel tool calls, null content beside
# tool_calls, nested tool schemas, tool results as objects, thinking flags, floats in
# arguments, an empty conversation, ...), rendered by Jinja2 the way transformers'
# apply_chat_template renders them (the environment README.md there describes).
# A development tool: run from the repository root with Debian's python3-jinja2.
import datetime, glob, json, os, sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=["jinja2.ext.loopcontrols", Generation])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: datetime.datetime(2024, 7, 26, 12, 0).strftime(fmt)

weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "description": "the city"}, "days": {"type": "integer"}},
    "required": ["city"]}}}
search = {"type": "function", "function": {"name": "search", "description": "Search\nthe web", "parameters": {
    "type": "object", "properties": {
        "q": {"type": "string", "enum": ["a", "b"]},
        "opts": {"type": "object", "properties": {"n": {"type": ["integer", "null"], "default": 3},
                                                  "tags": {"type": "array", "items": {"type": "string"}}}},
        "mode": {"anyOf": [{"type": "string"}, {"type": "number"}], "description": "mode"}},
    "required": ["q"]}}}
noargs = {"type": "function", "function": {"name": "noargs", "description": "No args",
                                           "parameters": {"type": "object", "properties": {}}}}


def call(id, name, arguments):
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


CASES = {
    "parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "Part one."},
                                                        {"type": "text", "text": "Part two."}]}],
              "add_generation_prompt": True},
    "null_content_calls": {"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call("abcdefghi", "get_weather", "{\"city\": \"Paris\"}")]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "{\"t\": 21}"},
        {"role": "assistant", "content": "It is 21."}], "tools": [weather], "add_generation_prompt": False},
    "two_calls": {"messages": [
        {"role": "user", "content": "Both?"},
        {"role": "assistant", "content": "", "tool_calls": [call("abcdefghi", "get_weather", {"city": "A"}),
                                                            call("bcdefghij", "get_weather", {"city": "B", "days": 2})]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "1"},
        {"role": "tool", "tool_call_id": "bcdefghij", "content": "2"}], "tools": [weather], "add_generation_prompt": True},
    "thinking": {"messages": [{"role": "user", "content": "Q"},
                              {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nA", "reasoning_content": "hmm"},
                              {"role": "user", "content": "Q2"}], "add_generation_prompt": True, "enable_thinking": False},
    "empty": {"messages": [], "add_generation_prompt": True},
    "long_system_tools_nogen": {"messages": [{"role": "system", "content": "  Sys with spaces  \n"},
                                             {"role": "user", "content": "x\ny"}],
                                "tools": [weather, noargs], "add_generation_prompt": False},
    "numbers": {"messages": [{"role": "user", "content": "1.5e3 \u2713 \\ \"q\" {% raw %}"},
                             {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}],
                "add_generation_prompt": True, "documents": [{"title": "T", "text": "D"}]},
    "nested_tools": {"messages": [{"role": "system", "content": "S1"},
                                  {"role": "user", "content": "h\u00e9llo \U0001F600 \u4e16\u754c", "name": "bob"}],
                     "tools": [search, weather], "add_generation_prompt": True, "tool_choice": "auto"},
    "tool_obj_content": {"messages": [
        {"role": "user", "content": "w"},
        {"role": "assistant", "content": None,
         "tool_calls": [call("abcdefghi", "search", {"q": "a", "opts": {"n": None, "tags": ["x", "y"]}})]},
        {"role": "tool", "tool_call_id": "abcdefghi", "name": "search", "content": [{"type": "text", "text": "R"}]},
        {"role": "user", "content": "more"}], "tools": [search], "add_generation_prompt": True},
    "system_last": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                 {"role": "system", "content": "late"}, {"role": "user", "content": "c"}],
                    "add_generation_prompt": True, "enable_thinking": True},
    "float_args": {"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "Calling.",
         "tool_calls": [call("abcdefghi", "get_weather", {"city": "Oslo", "days": 2.5, "big": 1e21, "neg": -0.0, "t": True})]},
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "ok"}], "tools": [weather], "add_generation_prompt": True},
}

templates = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/templates"
with open(os.path.join(os.path.dirname(__file__), "more_cases.jsonl"), "w") as out:
    for path in sorted(glob.glob(os.path.join(templates, "*.jinja"))):
        source = open(path).read()
        for name, case in CASES.items():
            variables = {"bos_token": "<BOS>", "eos_token": "<EOS>", **case}
            record = {"template": os.path.basename(path), "case": name, "input": variables}
            try:
                record["text"] = env.from_string(source).render(**variables)
            except jinja2.exceptions.TemplateError as e:
                # raise_exception's message alone, as cases.jsonl has it; Jinja2's own errors by class.
                record["error"] = str(e) if type(e) is jinja2.exceptions.TemplateError else f"{type(e).__name__}: {e}"
            except Exception as e:
                record["error"] = f"{type(e).__name__}: {e}"
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
