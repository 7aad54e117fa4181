#!/usr/bin/python3
"""What a forced tool call costs a request under speculation (JSON): the same chats with
tools on one `specd serve`, answered in free text (tool_choice "none") and as a call
(tool_choice "required", one call), streamed over HTTP, alternating.

For each prompt of conf/bench_prompts.txt as the user's turn, with one tool whose
parameters are a closed schema: a free answer and a required call (greedy, `max_tokens`
each), the two orders alternating from prompt to prompt. Reports, per mode, the median
tokens/s from the first streamed chunk to the last (completion tokens over that time),
the median completion tokens, how many required answers were complete calls, and the
required/free ratio of tokens/s.

    /usr/bin/python3 tools/bench/tool_call_bench.py [--prompts 8] [--max-tokens 300]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request

from served import DEFAULT_SPECD, read_prompts, serving, write_config

TOOLS = [{"type": "function", "function": {
    "name": "get_forecast", "description": "The forecast for a city",
    "parameters": {"type": "object",
                   "properties": {"city": {"enum": ["Verona", "Mantua", "Padua"]}, "days": {"enum": [1, 2, 3]},
                                  "note": {"type": "string", "maxLength": 24}},
                   "required": ["city", "days", "note"], "additionalProperties": False}}}]


def streamed_chat(url, body):
    """(seconds from the first chunk to the end, completion tokens, tool-call deltas seen, finish_reason)."""
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    first = None
    usage = None
    calls = 0
    finish = None
    with urllib.request.urlopen(request, timeout=3600) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            if "error" in chunk:
                raise RuntimeError(f"server answered {chunk}")
            if first is None:
                first = time.monotonic()
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices", []):
                calls += len(choice.get("delta", {}).get("tool_calls", []))
                finish = choice.get("finish_reason") or finish
    return time.monotonic() - first, usage["completion_tokens"], calls, finish


def run(url, prompts, max_tokens):
    out = {"free": [], "required": []}
    for i, prompt in enumerate(prompts):
        for mode in (["free", "required"] if i % 2 == 0 else ["required", "free"]):
            body = {"messages": [{"role": "user", "content": prompt}], "tools": TOOLS, "max_tokens": max_tokens,
                    "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
                    "tool_choice": "none" if mode == "free" else "required", "parallel_tool_calls": False}
            seconds, tokens, calls, finish = streamed_chat(url, body)
            out[mode].append({"tokens_per_second": tokens / seconds, "completion_tokens": tokens,
                              "complete_call": finish == "tool_calls" and calls > 0})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--specd", default=DEFAULT_SPECD)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=300)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"), {})
        command = ["serve", "--config", config]
        print("tool_call_bench: specd " + " ".join(command), file=sys.stderr)
        with serving(args.specd, command, "tool_call_bench") as (_, http_url):
            # One request first, so the grammar's compilation (cached after) is not timed.
            streamed_chat(http_url, {"messages": [{"role": "user", "content": "Hi"}], "tools": TOOLS,
                                     "tool_choice": "required", "max_tokens": 8, "stream": True,
                                     "stream_options": {"include_usage": True}})
            runs = run(http_url, read_prompts(args.prompts), args.max_tokens)
    report = {"target": "committed", "max_tokens": args.max_tokens, "prompts": args.prompts}
    for mode, rows in runs.items():
        report[mode] = {"tokens_per_second": statistics.median(r["tokens_per_second"] for r in rows),
                        "completion_tokens": statistics.median(r["completion_tokens"] for r in rows)}
    report["required"]["complete_calls"] = sum(r["complete_call"] for r in runs["required"])
    report["required_over_free_tokens_per_second"] = (report["required"]["tokens_per_second"] /
                                                      report["free"]["tokens_per_second"])
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
