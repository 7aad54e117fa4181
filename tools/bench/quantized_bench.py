#!/usr/bin/python3
"""Quantized weights against BF16 on one model, in one run (JSON).

Part 1, the model alone (`specd bench --model M --batch 1 --verify-rows 5,8`), for each way
in: the float checkpoint as stored, quantized at load (--weights int8, int4), and, when
given, checkpoints written by `specd quantize`. Per way: load seconds, packed GB, peak RSS
against the packed weights, a decode step against the bytes it reads over the measured
read bandwidth, verify passes of 5 and 8 rows in decode steps, and 128-token prefill; the
speeds also as ratios to the stored weights'.

Part 2, one request through `specd serve` with the draft: a server per format (stored,
int8, int4 target, and each --checkpoint as stored; the draft as stored), all started
first, then each prompt of conf/bench_prompts.txt sent to each server in turn,
target-only and with `k: auto` (greedy, --max-tokens, ignore_eos), so the host's drift
hits every format alike. Reports median decode tokens/s (the done frame's) and each as a
ratio to the stored target-only.

    /usr/bin/python3 tools/bench/quantized_bench.py --target /work/padded/target-3b-bf16 \\
        [--draft models/draft] [--checkpoint q4_k_m=/tmp/target-q4_k_m.gguf ...] [--prompts 4] \\
        [--max-tokens 128] [--formats stored,int8,int4] [--model-rounds 1] [--skip-model] [--skip-requests]

SPECD_KERNEL_ISA=avx2 in the environment runs both parts on the AVX2 kernels.
"""
import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

from served import DEFAULT_SPECD, HERE, read_prompts, serving, write_config, ws_generate

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: apt-get install python3-websockets (scripts/setup.sh does)")

FORMATS = ["stored", "int8", "int4"]


def model_figures(args, model, weights):
    command = [args.specd, "bench", "--model", model, "--weights", weights, "--batch", "1", "--verify-rows", "5,8",
               "--json"]
    print("quantized_bench:", " ".join(command), file=sys.stderr)
    out = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    t = out["target"]
    verify = {v["rows"]: v for v in t["verify"]}
    return {"model": model, "weights": weights, "load_seconds": t["load_seconds"], "packed_gb": t["packed_gb"],
            "peak_rss_gb": out["peak_rss_gb_target"], "rss_over_packed": out["peak_rss_gb_target"] / t["packed_gb"],
            "rss_before_load_gb": out["peak_rss_gb_before_load"],
            "rss_above_floor_over_packed": (out["peak_rss_gb_target"] - out["peak_rss_gb_before_load"]) / t["packed_gb"],
            "decode_ms": t["decode_ms_per_token"], "bound_ms": t["bound_ms_per_token"],
            "decode_over_bound": t["decode_ms_per_token"] / t["bound_ms_per_token"], "read_gbps": out["bound_gbps"],
            "verify5_steps": verify[5]["steps"], "verify8_steps": verify[8]["steps"],
            "decode_parts_ms": t["decode_parts_ms"], "verify5_parts_ms": verify[5]["parts_ms"],
            "prefill_tokens_per_second": t["prefill_tokens_per_second"]}


def model_part(args):
    """Each way's figures; with --model-rounds N the ways run N times, forward then backward
    in turn so drift hits them alike, and each figure is the way's median over rounds."""
    ways = [(args.target, w) for w in args.formats] + [(path, "stored") for _, path in args.checkpoint]
    runs = [[] for _ in ways]
    for r in range(args.model_rounds):
        order = range(len(ways)) if r % 2 == 0 else reversed(range(len(ways)))
        for i in order:
            runs[i].append(model_figures(args, *ways[i]))
    rows = [{key: (statistics.median(run[key] for run in way_runs) if isinstance(way_runs[0][key], float)
                   else way_runs[0][key]) for key in way_runs[0]} for way_runs in runs]
    for row, way_runs in zip(rows, runs):
        row["decode_ms_per_round"] = [run["decode_ms"] for run in way_runs]
    base = rows[0]
    for r in rows:
        r["decode_speed_over_stored"] = base["decode_ms"] / r["decode_ms"]
        r["prefill_over_stored"] = r["prefill_tokens_per_second"] / base["prefill_tokens_per_second"]
    return rows


async def one_request(url, prompt, spec, max_tokens, number):
    return await ws_generate(url, {"type": "generate", "id": f"q-{number}", "prompt": prompt,
                                   "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
                                   "speculative": spec})


def request_part(args, workdir):
    modes = {"target-only": {"enabled": False}, "auto": {"enabled": True, "k": "auto"}}
    prompts = read_prompts(args.prompts)
    # Each server's target and its --weights: the float checkpoint's --formats, then the checkpoints given.
    servers = {f: (args.target, f) for f in args.formats} | {name: (path, "stored") for name, path in args.checkpoint}
    speeds = {(f, m): [] for f in servers for m in modes}
    tokens_per_round = {f: [] for f in servers}

    async def run(urls):
        number = 0
        for prompt in prompts:
            for f in servers:
                for mode, spec in modes.items():
                    number += 1
                    speed, stats = await one_request(urls[f], prompt, spec, args.max_tokens, number)
                    speeds[(f, mode)].append(speed)
                    if mode == "auto" and stats.get("rounds"):
                        tokens_per_round[f].append(stats["tokens_per_round"])
                    print(f"quantized_bench: {f} {mode} {speed:.2f} tokens/s", file=sys.stderr)

    urls = {}
    with contextlib.ExitStack() as stack:
        for f, (target, weights) in servers.items():
            config = write_config(os.path.join(workdir, f"{f}.toml"), {
                "target": os.path.abspath(target), "draft": os.path.abspath(args.draft),
                "target_weights": weights, "draft_weights": "stored", "max_batch": 4, "kv_cache_memory": "1GiB"})
            _, url = stack.enter_context(serving(args.specd, ["serve", "--config", config], "quantized_bench"))
            urls[f] = url.replace("http://", "ws://") + "/v1/ws"
        asyncio.run(run(urls))
    base = statistics.median(speeds[("stored", "target-only")])
    out = {}
    for (f, mode), values in speeds.items():
        median = statistics.median(values)
        out[f"{f} {mode}"] = {"decode_tokens_per_second": median, "min": min(values), "max": max(values),
                              "over_stored_target_only": median / base}
        if mode == "auto" and tokens_per_round[f]:
            out[f"{f} {mode}"]["tokens_per_round"] = statistics.median(tokens_per_round[f])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specd", default=DEFAULT_SPECD)
    parser.add_argument("--target", required=True, help="float (F16/BF16) model directory")
    parser.add_argument("--draft", default=os.path.join(HERE, "..", "..", "models", "draft"))
    parser.add_argument("--checkpoint", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        help="NAME=PATH: a `specd quantize` checkpoint of the target, a folder or a GGUF file (repeatable)")
    parser.add_argument("--formats", default=",".join(FORMATS), type=lambda s: s.split(","),
                        help="the float checkpoint's ways, comma-separated, stored first (default: stored,int8,int4)")
    parser.add_argument("--model-rounds", type=int, default=1, help="part 1: runs of every way, alternating order")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--skip-model", action="store_true")
    parser.add_argument("--skip-requests", action="store_true")
    args = parser.parse_args()
    if args.formats[0] != "stored" or not set(args.formats) <= set(FORMATS):
        parser.error(f"--formats: a list of {','.join(FORMATS)} starting with stored (the ratios' base)")
    out = {"target": args.target, "draft": args.draft, "kernel_isa": os.environ.get("SPECD_KERNEL_ISA", "best")}
    if not args.skip_model:
        out["model"] = model_part(args)
    if not args.skip_requests:
        with tempfile.TemporaryDirectory() as workdir:
            out["one_request"] = request_part(args, workdir)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
