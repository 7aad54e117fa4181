#!/usr/bin/python3
"""Token trees against chains end to end: one request at a time through `specd serve`
(issue 24's "tree auto at least 1.1x the best chain at one request"). JSON on stdout.

A server per binary (`--specd LABEL=PATH`, repeatable, to compare builds in one run), all
started first. Then, per pass, prompt and temperature, each server in turn runs the same
request target-only, as a chain (`k: auto`, and each `--chain-k`) and as a tree (`tree:
auto`), so the host's drift hits every mode alike. Reports per binary, temperature and mode
the median decode tokens/s (the done frame's), its ratio to target-only, and tokens and
verified nodes per round; per binary and temperature, tree auto over the best chain.

    /usr/bin/python3 tools/bench/tree_served_bench.py --target /work/padded/target-3b-bf16 \\
        --draft /work/padded/draft-1b-bf16 [--specd new=build/specd] [--prompts 3] \\
        [--max-tokens 64] [--passes 2] [--temperatures 0,1] [--chain-k 2,3]
"""
import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile

from served import DEFAULT_SPECD, read_prompts, serving, write_config, ws_generate

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: apt-get install python3-websockets (scripts/setup.sh does)")


def modes(chain_ks):
    out = {"target-only": {"enabled": False}, "chain auto": {"k": "auto", "tree": "off"}}
    for k in chain_ks:
        out[f"chain {k}"] = {"k": k, "tree": "off"}
    out["tree auto"] = {"k": "auto", "tree": "auto"}
    return out


async def run(args, urls, prompts, temperatures, spec_modes):
    results = {}
    number = 0
    for pass_number in range(args.passes):
        for p, prompt in enumerate(prompts):
            for t in temperatures:
                for label, url in urls.items():
                    for mode, spec in spec_modes.items():
                        number += 1
                        body = {"type": "generate", "id": f"t-{number}", "prompt": prompt,
                                "max_tokens": args.max_tokens, "temperature": t, "ignore_eos": True,
                                "seed": args.seed + 1000 * pass_number + p, "speculative": spec}
                        speed, stats = await ws_generate(url, body)
                        cell = results.setdefault((label, t, mode), {"speeds": [], "tokens": 0, "rounds": 0,
                                                                     "drafted": 0})
                        cell["speeds"].append(speed)
                        rounds = stats.get("rounds", 0)
                        cell["rounds"] += rounds
                        cell["tokens"] += stats.get("tokens_per_round", 0) * rounds
                        cell["drafted"] += stats.get("drafted", 0)
                        print(f"tree_served_bench: {label} T={t} {mode}: {speed:.2f} tokens/s", file=sys.stderr)
    return results


def summary(results, labels, temperatures, spec_modes):
    out = []
    for label in labels:
        for t in temperatures:
            base = statistics.median(results[(label, t, "target-only")]["speeds"])
            rows = {}
            for mode in spec_modes:
                cell = results[(label, t, mode)]
                median = statistics.median(cell["speeds"])
                rows[mode] = {"tokens_per_second": median, "min": min(cell["speeds"]), "max": max(cell["speeds"]),
                              "over_target_only": median / base}
                if cell["rounds"]:
                    rows[mode]["tokens_per_round"] = cell["tokens"] / cell["rounds"]
                    rows[mode]["nodes_per_round"] = cell["drafted"] / cell["rounds"]
            chains = [m for m in spec_modes if m.startswith("chain")]
            best = max(chains, key=lambda m: rows[m]["tokens_per_second"])
            out.append({"specd": label, "temperature": t, "modes": rows, "best_chain": best,
                        "tree_over_best_chain": rows["tree auto"]["tokens_per_second"] /
                        rows[best]["tokens_per_second"]})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specd", action="append", default=[], help="LABEL=PATH (repeatable; default build/specd)")
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--temperatures", default="0,1")
    parser.add_argument("--chain-k", default="", help="fixed chain depths to run beside k auto, e.g. 2,3")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if any("=" not in s for s in args.specd):
        parser.error("--specd takes LABEL=PATH, e.g. --specd new=build/specd")
    binaries = dict(s.split("=", 1) for s in args.specd) if args.specd else {"specd": DEFAULT_SPECD}
    temperatures = [float(t) for t in args.temperatures.split(",")]
    spec_modes = modes([int(k) for k in args.chain_k.split(",") if k])
    prompts = read_prompts(args.prompts)
    with tempfile.TemporaryDirectory() as workdir, contextlib.ExitStack() as stack:
        urls = {}
        for label, path in binaries.items():
            config = write_config(os.path.join(workdir, f"{label}.toml"), {
                "target": os.path.abspath(args.target), "draft": os.path.abspath(args.draft), "max_batch": 4,
                "kv_cache_memory": "1GiB"})
            _, url = stack.enter_context(serving(os.path.abspath(path), ["serve", "--config", config],
                                                 "tree_served_bench"))
            urls[label] = url.replace("http://", "ws://") + "/v1/ws"
        results = asyncio.run(run(args, urls, prompts, temperatures, spec_modes))
    print(json.dumps({"target": args.target, "draft": args.draft, "prompts": len(prompts),
                      "max_tokens": args.max_tokens, "passes": args.passes,
                      "rows": summary(results, list(binaries), temperatures, spec_modes)}, indent=1))


if __name__ == "__main__":
    main()
