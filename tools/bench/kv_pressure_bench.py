#!/usr/bin/python3
"""Many long prompts against a bounded KV pool: resident memory and errors (JSON).

Starts `specd serve` on --target (target only) with --max-seq-len and --kv-cache-memory
(a TOML written from the arguments), reads its RSS once it listens, then runs --clients
clients at once, each with its own prompt (--prompt-words held-out words from its own
offset, so no two share a cached prefix) and --max-tokens greedy tokens (ignore_eos).
When their KV does not fit the pool, newcomers wait and the youngest running requests
are preempted; none may fail. Prints one JSON object: the weights' bytes on disk, the
KV line the server printed, RSS after start and its peak while serving (sampled every
0.5 s), the bound weights + kv_cache_memory + 10% (issue 26), every finish reason and
error, and the server's preemption and prefix-cache counters.

    /usr/bin/python3 tools/bench/kv_pressure_bench.py --target DIR \
        [--specd build/specd] [--max-seq-len 8192] [--kv-cache-memory 4GiB] [--clients 32] \
        [--prompt-words 900] [--max-tokens 64]
"""
import argparse
import glob
import json
import os
import re
import tempfile
import threading
import time
import urllib.request

from served import DEFAULT_SPECD, corpus_words, serving, write_config

UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def byte_count(text):
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|GiB)?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r}")
    return int(m.group(1)) * UNITS[m.group(2) or ""]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=60) as response:
        values = {}
        for line in response.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values


def complete(url, prompt, max_tokens, out):
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    sent = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=7200) as response:
            answer = json.loads(response.read())
        out.update({"finish_reason": answer["choices"][0]["finish_reason"], "usage": answer["usage"]})
    except urllib.error.HTTPError as e:
        out["error"] = f"HTTP {e.code}: {e.read().decode()[:300]}"
    except Exception as e:  # reported in the JSON
        out["error"] = repr(e)
    out["seconds"] = round(time.monotonic() - sent, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specd", default=DEFAULT_SPECD)
    parser.add_argument("--target", required=True)
    parser.add_argument("--max-seq-len", type=int, default=8192)
    parser.add_argument("--kv-cache-memory", type=byte_count, default=byte_count("4GiB"))
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--prompt-words", type=int, default=900)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    words = corpus_words()
    stride = len(words) // args.clients
    prompts = [" ".join(words[i * stride:i * stride + args.prompt_words]) for i in range(args.clients)]
    weights = sum(os.path.getsize(p) for p in glob.glob(os.path.join(args.target, "*.safetensors")))
    with tempfile.TemporaryDirectory() as directory:
        engine = {"target": os.path.abspath(args.target), "draft": "", "max_batch": args.clients,
                  "max_seq_len": args.max_seq_len, "kv_cache_memory": args.kv_cache_memory}
        config = write_config(os.path.join(directory, "bench.toml"), engine)
        with serving(args.specd, ["serve", "--config", config], "kv_pressure_bench") as (server, url):
            kv_line = server.stdout.readline().strip()
            rss_start = rss_bytes(server.pid)
            results = [{} for _ in prompts]
            clients = [threading.Thread(target=complete, args=(url, p, args.max_tokens, r), daemon=True)
                       for p, r in zip(prompts, results)]
            started = time.monotonic()
            for c in clients:
                c.start()
            rss_peak = rss_start
            while any(c.is_alive() for c in clients):
                rss_peak = max(rss_peak, rss_bytes(server.pid))
                time.sleep(0.5)
            seconds = time.monotonic() - started
            counters = metrics(url)
    bound = int((weights + args.kv_cache_memory) * 1.1)
    reasons = {}
    for r in results:
        key = r.get("finish_reason") or "error"
        reasons[key] = reasons.get(key, 0) + 1
    print(json.dumps({
        "target": args.target, "max_seq_len": args.max_seq_len, "kv_cache_memory": args.kv_cache_memory,
        "clients": args.clients, "kv_line": kv_line, "weights_bytes": weights,
        "rss_after_start_bytes": rss_start, "rss_peak_bytes": rss_peak, "bound_bytes": bound,
        "rss_after_start_within_bound": rss_start <= bound, "rss_peak_within_bound": rss_peak <= bound,
        "prompt_tokens": [r["usage"]["prompt_tokens"] for r in results if "usage" in r][:3],
        "finish_reasons": reasons, "errors": [r["error"] for r in results if "error" in r],
        "seconds": round(seconds, 1), "slowest_request_s": max(r.get("seconds", 0) for r in results),
        "preemptions": counters.get("specd:num_preemptions_total"),
        "kv_blocks_referenced_after": counters.get('specd_kv_blocks_referenced{model="target"}'),
        "prefix_cache_hits_tokens": counters.get("specd:prefix_cache_hits_total")}))


if __name__ == "__main__":
    main()
