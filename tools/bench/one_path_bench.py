#!/usr/bin/python3
"""One request through `specd generate` and through `specd serve`, side by side (JSON).

Both run the same Engine, so one greedy request should cost the same either way. For each
mode (target-only, K = 4, K = auto) and each repeat, in turn: `specd generate --json`
(a fresh process: its decode tokens/s, the ids), then the same request over a WebSocket
to one long-running `specd serve` (the done frame's decode tokens/s, the wall time of the
request, the ids). Interleaved, so the host's drift hits both sides alike. Prints one JSON
object: per mode the medians, min and max of each side, serve/generate, and whether every
repeat gave identical ids.

    /usr/bin/python3 tools/bench/one_path_bench.py [--specd build/specd] [--repeats 7] \
        [--max-tokens 128] [--prompt "ROMEO:"] [--serve-arg=--io-threads=2 ...]
"""
import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

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
               "--temperature", "0", "--ignore-eos", "--json", *cli_mode]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    return {"decode_tokens_per_second": out["decode_tokens_per_second"], "ids": out["token_ids"]}


async def run_serve(url, args, spec, number):
    request = {"type": "generate", "id": f"bench-{number}", "prompt": args.prompt, "max_tokens": args.max_tokens,
               "temperature": 0, "ignore_eos": True, "speculative": spec}
    ids = []
    async with websockets.connect(url, max_size=None) as ws:
        start = time.perf_counter()
        await ws.send(json.dumps(request))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "tokens":
                ids += frame["token_ids"]
            elif frame["type"] == "done":
                wall = time.perf_counter() - start
                return {"decode_tokens_per_second": frame["timings"]["tokens_per_second"],
                        "wall_tokens_per_second": len(ids) / wall, "ids": ids}
            else:
                raise RuntimeError(f"server answered {frame}")


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def bench(args, url):
    runs = {mode: {"generate": [], "serve": [], "serve_wall": [], "ids_identical": True} for mode in MODES}
    for repeat in range(args.repeats):
        for mode, (cli_mode, spec) in MODES.items():
            generated = run_generate(args, cli_mode)
            served = await run_serve(url, args, spec, f"{mode}-{repeat}")
            r = runs[mode]
            r["generate"].append(generated["decode_tokens_per_second"])
            r["serve"].append(served["decode_tokens_per_second"])
            r["serve_wall"].append(served["wall_tokens_per_second"])
            r["ids_identical"] &= generated["ids"] == served["ids"]
    out = {}
    for mode, r in runs.items():
        generate, serve = summary(r["generate"]), summary(r["serve"])
        out[mode] = {"generate_decode_tokens_per_second": generate, "serve_decode_tokens_per_second": serve,
                     "serve_wall_tokens_per_second": summary(r["serve_wall"]),
                     "serve_over_generate": serve["median"] / generate["median"], "ids_identical": r["ids_identical"]}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specd", default="build/specd")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--prompt", default="ROMEO:")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra `specd serve` argument (repeatable)")
    args = parser.parse_args()
    if args.repeats < 1 or args.max_tokens < 1:
        parser.error("--repeats and --max-tokens must be at least 1")
    server = subprocess.Popen([args.specd, "serve", "--port", "0", *args.serve_arg], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if "listening on http://" not in line:
            sys.exit(f"one_path_bench: specd serve did not start: {line!r}")
        http = line.split("listening on ")[1].split()[0]
        modes = asyncio.run(bench(args, "ws" + http[4:] + "/v1/ws"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps({"prompt": args.prompt, "max_tokens": args.max_tokens, "repeats": args.repeats,
                      "serve_args": args.serve_arg, "modes": modes}))


if __name__ == "__main__":
    main()
