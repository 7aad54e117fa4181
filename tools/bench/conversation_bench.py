#!/usr/bin/python3
"""A growing conversation against `specd serve`, turn by turn, with the prefix cache and without (JSON).

A chat client sends its whole conversation again every turn. This starts one server (a
TOML written from the arguments), then plays one conversation: turn 1 sends --first-words
words of held-out Shakespeare, every later turn the conversation so far (each earlier turn's
text and the answer the server streamed back) plus the next --turn-words words; the last
turn adds only --last-words words, the case of a short reply to a long history. Every turn
is sent twice, one after the other: with the prefix cache, and with `cache_prompt: false`
(the same server, the same prompt: the baseline of the same run). Each answer is
--max-tokens greedy tokens. Prints one JSON object: per turn the prompt tokens, the cached
tokens, the time to first token of each side and their ratio, and the conversation's
totals (the hit rate in tokens, last turn's TTFT over the first's).

    /usr/bin/python3 tools/bench/conversation_bench.py --target DIR --draft DIR|none \
        [--specd build/specd] [--turns 8] [--first-words 90] [--turn-words 90] [--last-words 15] \
        [--max-tokens 16] [--prefill-chunk 0] [--kv-cache-memory 0] [--max-seq-len 1024]
"""
import argparse
import json
import os
import sys
import tempfile
import time

from served import DEFAULT_SPECD, held_out_words, serving, stream_completion, write_config


def timed_completion(url, prompt, max_tokens, cache_prompt):
    """A streamed greedy completion; returns (ttft seconds, text, usage)."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": cache_prompt, "ignore_eos": True}
    sent = time.monotonic()
    ttft, text, usage = None, [], None
    for chunk in stream_completion(url, body):
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices", []):
            if choice.get("text"):
                if ttft is None:
                    ttft = time.monotonic() - sent
                text.append(choice["text"])
    return ttft, "".join(text), usage


def config_for(args, directory):
    engine = {"target": os.path.abspath(args.target),
              "draft": "" if args.draft == "none" else os.path.abspath(args.draft),
              "max_batch": 4, "max_seq_len": args.max_seq_len, "prefill_chunk": args.prefill_chunk,
              "kv_cache_memory": args.kv_cache_memory}
    return write_config(os.path.join(directory, "bench.toml"), engine)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specd", default=DEFAULT_SPECD)
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True, help="draft model directory, or none")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--first-words", type=int, default=90)
    parser.add_argument("--turn-words", type=int, default=90)
    parser.add_argument("--last-words", type=int, default=15)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--prefill-chunk", type=int, default=0)
    parser.add_argument("--kv-cache-memory", type=int, default=0)
    parser.add_argument("--max-seq-len", type=int, default=1024)
    parser.add_argument("--no-baseline", action="store_true", help="skip the cache_prompt=false sends")
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be at least 2")
    words = held_out_words()
    with tempfile.TemporaryDirectory() as directory:
        config = config_for(args, directory)
        with serving(args.specd, ["serve", "--config", config], "conversation_bench") as (server, url):
            kv_line = server.stdout.readline().strip()
            turns, conversation, used = [], "", 0
            for turn in range(1, args.turns + 1):
                n = args.first_words if turn == 1 else args.last_words if turn == args.turns else args.turn_words
                conversation += " ".join(words[used:used + n]) + "\n"
                used += n
                ttft, answer, usage = timed_completion(url, conversation, args.max_tokens, True)
                row = {"turn": turn, "prompt_tokens": usage["prompt_tokens"],
                       "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"], "ttft_s": round(ttft, 3)}
                if not args.no_baseline:
                    base_ttft, base_answer, _ = timed_completion(url, conversation, args.max_tokens, False)
                    row["uncached_ttft_s"] = round(base_ttft, 3)
                    row["uncached_over_cached"] = round(base_ttft / ttft, 2)
                    row["same_answer"] = base_answer == answer
                turns.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
                conversation += answer + "\n"
    prompt_tokens = sum(t["prompt_tokens"] for t in turns)
    cached = sum(t["cached_tokens"] for t in turns)
    print(json.dumps({"target": args.target, "draft": args.draft, "kv_cache": kv_line,
                      "prefill_chunk": args.prefill_chunk, "max_tokens": args.max_tokens, "turns": turns,
                      "hit_rate_tokens": round(cached / prompt_tokens, 3),
                      "last_ttft_over_first": round(turns[-1]["ttft_s"] / turns[0]["ttft_s"], 2),
                      "longest_before_last_ttft_over_first": round(turns[-2]["ttft_s"] / turns[0]["ttft_s"], 2)}))


if __name__ == "__main__":
    main()
