#!/usr/bin/python3
"""Speculation under load through `specd serve` (JSON): `k auto` against speculation off,
on one server, at each client count.

At each level, `clients` threads send their requests at once over `/v1/completions`
(streamed, greedy, `ignore_eos`, `max_tokens` each), and the level's figure is the
aggregate tokens per second from the first request sent to the last token received.
Off is `"speculative": {"enabled": false}` per request, auto is the server's default
(`k auto`); the two alternate within each repeat (off first in even repeats, auto
first in odd ones) so the host's drift hits both alike. The ratio auto/off is taken per
repeat and its median reported, with the medians of each mode.

    /usr/bin/python3 tools/bench/spec_load_bench.py --target /work/padded/target-3b-bf16 \\
        --draft models/draft --weights int4 --levels 1,2,4,8,16,32 --repeat 3

SPECD_KERNEL_ISA=avx2 in the environment runs the server on the AVX2 kernels. With
--trace the server records its rounds and the report adds, per level and mode, the
rounds' rows, drafting rows, and the planner's predicted against measured round time.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request

from served import DEFAULT_SPECD, read_prompts, serving, stream_completion, write_config


def one_request(url, prompt, max_tokens, spec_off):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    if spec_off:
        body["speculative"] = {"enabled": False}
    for chunk in stream_completion(url, body):
        if chunk.get("usage"):
            return chunk["usage"]["completion_tokens"]
    raise RuntimeError("the stream ended without usage")


def run_level(url, prompts, clients, per_client, max_tokens, spec_off):
    """Aggregate tokens/s of `clients` threads, each sending `per_client` requests in turn."""

    def client(c):
        n = 0
        for i in range(per_client):
            n += one_request(url, prompts[(c * 7 + i) % len(prompts)], max_tokens, spec_off)
        return n

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
        tokens = sum(pool.map(client, range(clients)))
    seconds = time.monotonic() - start
    return tokens / seconds, tokens, seconds


def rounds_since(url, since_us):
    """The server's scheduler rounds recorded after `since_us` (trace clock), from GET /v1/trace,
    the trace's end, and how many events the server's ring has dropped so far. The window
    is the route's widest (an hour): its default, the last 10 s, would keep only a long
    run's tail."""
    with urllib.request.urlopen(url + "/v1/trace?seconds=3600", timeout=60) as r:
        trace = json.load(r)
    events = trace["traceEvents"]
    rounds = [e for e in events if e.get("name") == "round" and e.get("ph") == "X" and "rows" in e.get("args", {})]
    last = max((e["ts"] + e["dur"] for e in events if e.get("ph") == "X"), default=0)
    return [e for e in rounds if e["ts"] >= since_us], last, trace["otherData"]["dropped_events"]


def summarize_rounds(rounds):
    """Decode rounds only (no newcomer, no prompt chunk): rows, drafting rows, predicted and measured ms."""
    decode = [e["args"] | {"ms": e["dur"] / 1e3} for e in rounds
              if e["args"].get("newcomers", 0) == 0 and e["args"].get("prompt_tokens", 0) == 0 and e["args"]["rows"] > 0]
    if not decode:
        return {}
    drafting = [a for a in decode if a["drafting_rows"] > 0]
    planned = [a for a in decode if "planned_ms" in a]
    # Where a run's time went: decode rounds against the rounds that prefilled newcomers.
    all_s = sum(e["dur"] for e in rounds) / 1e6
    decode_s = sum(a["ms"] for a in decode) / 1e3
    out = {"decode_rounds": len(decode), "other_rounds": len(rounds) - len(decode),
           "decode_seconds": decode_s, "other_seconds": all_s - decode_s,
           "drafting_share": len(drafting) / len(decode),
           "rows_mean": statistics.mean(a["rows"] for a in decode),
           "tokens_per_round": statistics.mean(a["tokens"] for a in decode)}
    # Plain rounds' time by their row count: the two modes compared at equal batch sizes.
    by_rows = {}
    for a in decode:
        if a["drafting_rows"] == 0:
            by_rows.setdefault(a["rows"], []).append(a["ms"])
    out["plain_ms_median_by_rows"] = {str(r): statistics.median(v) for r, v in sorted(by_rows.items())}
    if planned:
        out["planned_ms_median"] = statistics.median(a["planned_ms"] for a in planned)
        out["measured_ms_median"] = statistics.median(a["ms"] for a in planned)
        out["measured_over_planned_median"] = statistics.median(a["ms"] / a["planned_ms"] for a in planned
                                                                if a["planned_ms"] > 0)
    if drafting:
        out["drafted_per_drafting_row"] = statistics.mean(a["drafted"] / a["drafting_rows"] for a in drafting)
        # The acceptance estimate's bias: tokens a drafting round delivered over what the planner expected.
        judged = [a["tokens"] / a["planned_tokens"] for a in drafting if a.get("planned_tokens", 0) > 0]
        if judged:
            out["drafting_tokens_over_planned_median"] = statistics.median(judged)
            out["drafting_tokens_over_planned_mean"] = statistics.mean(judged)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--specd", default=DEFAULT_SPECD)
    p.add_argument("--target", required=True)
    p.add_argument("--draft", default="models/draft")
    p.add_argument("--weights", default="stored", choices=["stored", "int8", "int4"])
    p.add_argument("--levels", default="1,4")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--requests-per-client", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--trace", action="store_true", help="report the planner's rounds from the server's trace")
    p.add_argument("--trace-capacity", type=int, default=1_000_000,
                   help="events the server's trace ring holds; a run must fit in it")
    p.add_argument("--extra", default="", help="more `specd serve` flags, space separated")
    args = p.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    prompts = read_prompts()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"), {}, trace=args.trace,
                              trace_capacity=args.trace_capacity)
        command = ["serve", "--config", config, "--model", args.target, "--draft", args.draft, "--weights", args.weights,
                   "--draft-weights", "stored", *args.extra.split()]
        print("spec_load_bench: specd " + " ".join(command), file=sys.stderr)
        with serving(args.specd, command, "spec_load_bench") as (_, url):
            run_level(url, prompts, 1, 1, 8, True)  # warm the pages and the first-request paths
            report = {"target": args.target, "draft": args.draft, "weights": args.weights,
                      "isa": os.environ.get("SPECD_KERNEL_ISA", "best"), "max_tokens": args.max_tokens,
                      "requests_per_client": args.requests_per_client, "levels": []}
            # The trace's end and its dropped count so far; each run's fetch afterwards moves them on.
            _, since, dropped = rounds_since(url, 0) if args.trace else (None, 0, 0)
            for clients in levels:
                runs = {"off": [], "auto": []}
                rounds = {"off": [], "auto": []}
                per_repeat = {"off": [], "auto": []}  # each run's rounds alone: where one repeat differs
                traced = {"off": 0, "auto": 0}  # tokens the traced rounds delivered, against the clients' count
                delivered = {"off": 0, "auto": 0}
                for r in range(args.repeat):
                    for mode in (["off", "auto"] if r % 2 == 0 else ["auto", "off"]):
                        tps, tokens, seconds = run_level(url, prompts, clients, args.requests_per_client,
                                                         args.max_tokens, mode == "off")
                        runs[mode].append(tps)
                        if args.trace:
                            seen, end, dropped_after = rounds_since(url, since)
                            if dropped_after > dropped:
                                sys.exit(f"spec_load_bench: the trace ring dropped {dropped_after - dropped} events "
                                         "during a run; raise --trace-capacity")
                            since = end
                            rounds[mode] += seen
                            per_repeat[mode].append(summarize_rounds(seen))
                            traced[mode] += sum(e["args"]["tokens"] for e in seen)
                            delivered[mode] += tokens
                        print(f"spec_load_bench: {clients} clients {mode}: {tps:.2f} tokens/s "
                              f"({tokens} in {seconds:.1f} s)", file=sys.stderr)
                ratios = [a / o for a, o in zip(runs["auto"], runs["off"])]
                level = {"clients": clients, "off_tokens_per_second": statistics.median(runs["off"]),
                         "auto_tokens_per_second": statistics.median(runs["auto"]),
                         "auto_over_off": statistics.median(ratios), "auto_over_off_per_repeat": ratios,
                         "per_repeat": runs}
                if args.trace:
                    level["rounds"] = {mode: summarize_rounds(rs) | {"traced_token_share": traced[mode] / delivered[mode]}
                                       for mode, rs in rounds.items()}
                    level["rounds_per_repeat"] = per_repeat
                report["levels"].append(level)
                print(f"spec_load_bench: {clients} clients auto/off {level['auto_over_off']:.2f}", file=sys.stderr)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
