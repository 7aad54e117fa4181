#!/usr/bin/python3
"""Running streams while a long prompt arrives: their inter-token gaps with and without it (JSON).

Starts `specd serve` once per --prefill-slowdown value (a TOML written from the arguments).
On each server, --streams clients stream greedy completions (ignore_eos) from short
prompts; after --warmup-s the gaps between their bursts are recorded for --baseline-s
(the baseline of the same run); then one prompt of --long-words held-out words (about
2.7 tokens a word on the committed tokenizer) is sent with max_tokens 1 and the streams'
gaps are recorded from its send until its first token arrives. A gap is the time
between two bursts of one stream (a burst holds the tokens of one round). Prints one
JSON object: per slowdown the baseline median and p99, the p99 and max while the prompt
prefilled, p99 over the baseline median (issue 26's bar: at most 2.5), the long
prompt's tokens and its time to first token.

    /usr/bin/python3 tools/bench/prefill_interference_bench.py --target DIR --draft DIR|none \
        [--specd build/specd] [--slowdowns 1.5,0] [--streams 4] [--long-words 480] \
        [--warmup-s 5] [--baseline-s 20] [--prefill-chunk 128] [--trace-dir DIR]

--trace-dir keeps each server's trace (GET /v1/trace) as DIR/trace-<slowdown>.json for
the viewer (/trace): where a round's time went while the chunks rode along.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request

from served import DEFAULT_SPECD, held_out_words, serving, stream_completion, write_config

STREAM_PROMPTS = ["ROMEO:\nBut soft, what light", "KING HENRY VI:\nO God", "JULIET:\n",
                  "HAMLET:\nTo be, or not to be", "BRUTUS:\nThe people", "LUCIO:\n"]


class Stream(threading.Thread):
    """One client's completion; the arrival time of each burst that carried text."""

    def __init__(self, url, prompt, max_tokens, stop):
        super().__init__(daemon=True)
        self.url, self.prompt, self.max_tokens, self.stop = url, prompt, max_tokens, stop
        self.arrivals, self.error = [], None

    def run(self):
        body = {"prompt": self.prompt, "max_tokens": self.max_tokens, "temperature": 0, "stream": True,
                "ignore_eos": True}
        try:
            for chunk in stream_completion(self.url, body):
                if any(c.get("text") for c in chunk.get("choices", [])):
                    self.arrivals.append(time.monotonic())
                if self.stop.is_set():
                    return  # closing the connection cancels the request
        except Exception as e:  # reported in the JSON
            self.error = repr(e)


def gaps_between(streams, start, end):
    out = []
    for s in streams:
        times = s.arrivals
        out += [b - a for a, b in zip(times, times[1:]) if start <= b <= end]
    return out


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def config_for(args, directory, slowdown):
    engine = {"target": os.path.abspath(args.target),
              "draft": "" if args.draft == "none" else os.path.abspath(args.draft),
              "max_batch": args.streams + 1, "max_seq_len": args.max_seq_len,
              "prefill_chunk": args.prefill_chunk, "prefill_slowdown": slowdown}
    return write_config(os.path.join(directory, f"bench-{slowdown}.toml"), engine, trace=bool(args.trace_dir))


def measure(args, url, long_prompt):
    stop = threading.Event()
    streams = [Stream(url, STREAM_PROMPTS[i % len(STREAM_PROMPTS)], args.max_seq_len - 64, stop)
               for i in range(args.streams)]
    for s in streams:
        s.start()
    time.sleep(args.warmup_s)
    base_start = time.monotonic()
    time.sleep(args.baseline_s)
    base_end = time.monotonic()
    sent = time.monotonic()
    first, usage = None, None
    body = {"prompt": long_prompt, "max_tokens": 1, "temperature": 0, "stream": True, "cache_prompt": False,
            "stream_options": {"include_usage": True}}
    for chunk in stream_completion(url, body):
        if first is None and any(c.get("text") for c in chunk.get("choices", [])):
            first = time.monotonic()
        if chunk.get("usage"):
            usage = chunk["usage"]
    first = first or time.monotonic()
    time.sleep(0.5)  # the streams' first bursts after the prompt's last chunk
    stop.set()
    for s in streams:
        s.join(timeout=120)
    baseline = gaps_between(streams, base_start, base_end)
    during = gaps_between(streams, sent, first + 0.5)
    median = statistics.median(baseline)
    return {"baseline_gaps": len(baseline), "baseline_median_s": round(median, 3),
            "baseline_p99_s": round(percentile(baseline, 0.99), 3),
            "during_gaps": len(during), "during_median_s": round(statistics.median(during), 3),
            "during_p99_s": round(percentile(during, 0.99), 3), "during_max_s": round(max(during), 3),
            "during_p99_over_baseline_median": round(percentile(during, 0.99) / median, 2),
            "long_prompt_tokens": usage["prompt_tokens"] if usage else None,
            "long_prompt_ttft_s": round(first - sent, 2),
            "stream_errors": [s.error for s in streams if s.error]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specd", default=DEFAULT_SPECD)
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True, help="draft model directory, or none")
    parser.add_argument("--slowdowns", default="1.5,0", help="prefill_slowdown values, one server each")
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--long-words", type=int, default=480)
    parser.add_argument("--warmup-s", type=float, default=5)
    parser.add_argument("--baseline-s", type=float, default=20)
    parser.add_argument("--prefill-chunk", type=int, default=128)
    parser.add_argument("--max-seq-len", type=int, default=1024)
    parser.add_argument("--trace-dir", help="keep each server's trace here")
    args = parser.parse_args()
    long_prompt = " ".join(held_out_words()[:args.long_words]) + "\n"
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for slowdown in [float(s) for s in args.slowdowns.split(",")]:
            config = config_for(args, directory, slowdown)
            with serving(args.specd, ["serve", "--config", config], "prefill_interference_bench") as (_, url):
                row = {"prefill_slowdown": slowdown, **measure(args, url, long_prompt)}
                if args.trace_dir:
                    with urllib.request.urlopen(url + "/v1/trace?seconds=3600", timeout=120) as response, \
                            open(os.path.join(args.trace_dir, f"trace-{slowdown:g}.json"), "wb") as out:
                        out.write(response.read())
            runs.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"target": args.target, "draft": args.draft, "streams": args.streams,
                      "prefill_chunk": args.prefill_chunk, "runs": runs}))


if __name__ == "__main__":
    main()
