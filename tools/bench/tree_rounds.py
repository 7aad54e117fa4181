#!/usr/bin/env python3
"""Accepted tokens per round of token trees against chains with the same number of
verified nodes (issue 24), counted from `specd generate --json` on the first prompts of
conf/bench_prompts.txt. Counts, not times: the host's noise does not move them. Prints
one JSON object: per temperature and shape, tokens and nodes per round."""
import argparse
import json
import pathlib
import subprocess

from served import read_prompts

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHAPES = [("chain", "4"), ("tree", "4"), ("tree", "2,1"), ("chain", "6"), ("tree", "2,2"), ("tree", "3,1"),
          ("chain", "8"), ("tree", "2,1,1,1"), ("tree", "4,1")]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--specd", default=str(ROOT / "build" / "specd"))
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--seeds", type=int, default=1, help="sum over this many seeds from --seed (T > 0 varies by seed)")
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--shapes", help="space-separated kind:value, e.g. 'chain:4 tree:2,1' (default: the table's nine)")
    ap.add_argument("extra", nargs="*", help="more generate options, e.g. --model DIR --draft DIR")
    a = ap.parse_args()
    prompts = read_prompts(a.prompts)
    rows = []
    shapes = [tuple(x.split(":")) for x in a.shapes.split()] if a.shapes else SHAPES
    for temperature in [float(t) for t in a.temperatures.split(",")]:
        for kind, value in shapes:
            emitted = rounds = nodes = 0
            for p, seed in ((p, a.seed + i) for p in prompts for i in range(a.seeds if temperature > 0 else 1)):
                option = ["--k", value] if kind == "chain" else ["--tree", value]
                out = subprocess.run([a.specd, "generate", "--prompt", p, "--max-tokens", str(a.max_tokens),
                                      "--temperature", str(temperature), "--seed", str(seed), "--json"] + option +
                                     a.extra, capture_output=True, text=True, check=True)
                spec = json.loads(out.stdout)["spec"]
                emitted += spec["tokens_per_round"] * spec["rounds"]
                rounds += spec["rounds"]
                nodes += spec["drafted"]
            rows.append({"temperature": temperature, "shape": f"{kind} {value}",
                         "tokens_per_round": emitted / rounds if rounds else 0,
                         "nodes_per_round": nodes / rounds if rounds else 0})
    print(json.dumps({"prompts": len(prompts), "seeds": a.seeds, "max_tokens": a.max_tokens, "rows": rows}))


if __name__ == "__main__":
    main()
