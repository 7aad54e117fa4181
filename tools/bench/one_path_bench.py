#!/usr/bin/python3
"""One request through `specd generate` and through `specd serve`, side by side (JSON).

Both run the same Engine, so one greedy request should cost the same either way. For each
mode (target-only, K = 4, K = auto) and each repeat, in turn: `specd generate --json`
(a fresh process: its decode tokens/s, the ids), then the same request over a WebSocket
to one long-running `specd serve` (the done frame's decode tokens/s, the wall time of the
request, the ids). Interleaved, so the host's drift hits both sides alike. Prints one JSON
object: per mode the medians, min and max of each side, serve/generate, whether every
repeat gave identical ids, and those ids (to compare two builds). For the served request it
also says where the CPUs went: the server's threads by name (the compute lanes name
theirs) and this client, in CPUs busy.

    /usr/bin/python3 tools/bench/one_path_bench.py [--specd build/specd] [--repeats 7] \
        [--max-tokens 128] [--prompt "ROMEO:"] [--serve-arg=--io-threads=2 ...] \
        [--pair-arg=--model=DIR --pair-arg=--draft=DIR]
"""
import argparse
import asyncio
import collections
import json
import os
import statistics
import subprocess
import sys
import time

from served import serving

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: apt-get install python3-websockets (scripts/setup.sh does)")

MODES = {
    "target-only": (["--no-spec"], {"enabled": False}),
    "k4": (["--k", "4"], {"enabled": True, "k": 4}),
    "auto": (["--k", "auto"], {"enabled": True, "k": "auto"}),
}


def run_generate(args, cli_mode):
    command = [args.specd, "generate", "--prompt", args.prompt, "--max-tokens", str(args.max_tokens),
               "--temperature", "0", "--ignore-eos", "--json", *args.pair_arg, *cli_mode]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    return {"decode_tokens_per_second": out["decode_tokens_per_second"], "ids": out["token_ids"]}


TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """CPU seconds so far of each of the process's threads, summed by thread name
    (the compute lanes name theirs "target lane" and "draft lane")."""
    seconds = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        seconds[name] += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return seconds


async def run_serve(url, args, spec, number, server_pid):
    request = {"type": "generate", "id": f"bench-{number}", "prompt": args.prompt, "max_tokens": args.max_tokens,
               "temperature": 0, "ignore_eos": True, "speculative": spec}
    ids = []
    async with websockets.connect(url, max_size=None) as ws:
        server_before, client_before = thread_cpu(server_pid), time.process_time()
        start = time.perf_counter()
        await ws.send(json.dumps(request))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "tokens":
                ids += frame["token_ids"]
            elif frame["type"] == "done":
                wall = time.perf_counter() - start
                client_cpu = time.process_time() - client_before
                server = thread_cpu(server_pid)
                server.subtract(server_before)
                # Where the two CPUs went during the request, in CPUs (1.0 = one core busy).
                cpus = {name: seconds / wall for name, seconds in server.items() if seconds > 0}
                cpus["client"] = client_cpu / wall
                return {"decode_tokens_per_second": frame["timings"]["tokens_per_second"],
                        "wall_tokens_per_second": len(ids) / wall, "ids": ids, "cpus": cpus}
            else:
                raise RuntimeError(f"server answered {frame}")


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def bench(args, url, server_pid):
    runs = {mode: {"generate": [], "serve": [], "serve_wall": [], "cpus": collections.defaultdict(list),
                   "ids_identical": True, "ids": None} for mode in MODES}
    for repeat in range(args.repeats):
        for mode, (cli_mode, spec) in MODES.items():
            generated = run_generate(args, cli_mode)
            served = await run_serve(url, args, spec, f"{mode}-{repeat}", server_pid)
            r = runs[mode]
            r["generate"].append(generated["decode_tokens_per_second"])
            r["serve"].append(served["decode_tokens_per_second"])
            r["serve_wall"].append(served["wall_tokens_per_second"])
            r["ids_identical"] &= generated["ids"] == served["ids"] and r["ids"] in (None, generated["ids"])
            r["ids"] = generated["ids"]
            for name, cpus in served["cpus"].items():
                r["cpus"][name].append(cpus)
    out = {}
    for mode, r in runs.items():
        generate, serve = summary(r["generate"]), summary(r["serve"])
        out[mode] = {"generate_decode_tokens_per_second": generate, "serve_decode_tokens_per_second": serve,
                     "serve_wall_tokens_per_second": summary(r["serve_wall"]),
                     "serve_over_generate": serve["median"] / generate["median"], "ids_identical": r["ids_identical"],
                     # The ids every repeat gave, so two builds' runs can be compared.
                     "ids": r["ids"],
                     # CPUs busy during a served request (median), by server thread name and the client.
                     "serve_cpus": {name: statistics.median(v + [0] * (args.repeats - len(v)))
                                    for name, v in sorted(r["cpus"].items())}}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specd", default="build/specd")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompt", default="ROMEO:")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra `specd serve` argument (repeatable)")
    parser.add_argument("--pair-arg", action="append", default=[],
                        help="a model argument for both `generate` and `serve`, e.g. --pair-arg=--model=DIR (repeatable)")
    args = parser.parse_args()
    if args.repeats < 1 or args.max_tokens < 1:
        parser.error("--repeats and --max-tokens must be at least 1")
    serve = ["serve", "--port", "0", *args.pair_arg, *args.serve_arg]
    with serving(args.specd, serve, "one_path_bench") as (server, http):
        modes = asyncio.run(bench(args, "ws" + http[4:] + "/v1/ws", server.pid))
    print(json.dumps({"prompt": args.prompt, "max_tokens": args.max_tokens, "repeats": args.repeats,
                      "serve_args": args.serve_arg, "pair_args": args.pair_arg, "modes": modes}))


if __name__ == "__main__":
    main()
