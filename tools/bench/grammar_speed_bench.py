#!/usr/bin/python3
"""What structured output costs a request under speculation (JSON): the same prompts with
and without a JSON schema on one `specd serve`, over the WebSocket, alternating.

For each prompt of conf/bench_prompts.txt: an unconstrained request and one with
`response_format` json_schema (greedy, `max_tokens` each), the two orders alternating
from prompt to prompt. Reports, per mode, the median decode tokens/s (the done frame's
timings: first token to finish, so per generated token) and the speculative tokens per
round, and schema/free ratios of both.

    /usr/bin/python3 tools/bench/grammar_speed_bench.py [--target DIR --draft DIR]
        [--weights int4] [--prompts 8] [--max-tokens 64]
"""
import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile

from served import DEFAULT_SPECD, read_prompts, serving, write_config, ws_generate

# Open-ended enough that documents run long: a list of short lines with a speaker.
SCHEMA = {
    "type": "object",
    "properties": {
        "speaker": {"type": "string", "maxLength": 16},
        "lines": {"type": "array", "items": {"type": "string", "maxLength": 40}},
    },
    "required": ["speaker", "lines"],
    "additionalProperties": False,
}


async def run(url, prompts, max_tokens):
    out = {"free": [], "schema": []}
    for i, prompt in enumerate(prompts):
        for mode in (["free", "schema"] if i % 2 == 0 else ["schema", "free"]):
            body = {"type": "generate", "id": f"g{i}-{mode}", "prompt": prompt, "max_tokens": max_tokens,
                    "temperature": 0}
            if mode == "schema":
                body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}
            tps, spec = await ws_generate(url, body)
            out[mode].append({"tokens_per_second": tps, "tokens_per_round": spec.get("tokens_per_round", 0),
                              "acceptance_rate": spec.get("acceptance_rate", 0)})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--specd", default=DEFAULT_SPECD)
    p.add_argument("--target", default="")
    p.add_argument("--draft", default="")
    p.add_argument("--weights", default="stored")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=64)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"), {})
        command = ["serve", "--config", config, "--weights", args.weights]
        if args.target:
            command += ["--model", args.target]
        if args.draft:
            command += ["--draft", args.draft, "--draft-weights", "stored"]
        print("grammar_speed_bench: specd " + " ".join(command), file=sys.stderr)
        with serving(args.specd, command, "grammar_speed_bench") as (_, http_url):
            ws_url = http_url.replace("http://", "ws://") + "/v1/ws"
            runs = asyncio.run(run(ws_url, read_prompts(args.prompts), args.max_tokens))
    report = {"target": args.target or "committed", "weights": args.weights, "max_tokens": args.max_tokens,
              "isa": os.environ.get("SPECD_KERNEL_ISA", "best")}
    for mode, rows in runs.items():
        report[mode] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    report["schema_over_free_tokens_per_second"] = (report["schema"]["tokens_per_second"] /
                                                    report["free"]["tokens_per_second"])
    report["schema_over_free_tokens_per_round"] = (report["schema"]["tokens_per_round"] /
                                                   max(report["free"]["tokens_per_round"], 1e-9))
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
