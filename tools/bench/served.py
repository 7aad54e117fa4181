"""What the serving benchmarks share: a `specd serve` process on a free port, its TOML
config, the held-out corpus text, and OpenAI-style streamed completions."""
import contextlib
import json
import os
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "..", "shared", "data", "tinyshakespeare.txt")
DEFAULT_SPECD = os.path.join(HERE, "..", "..", "build", "specd")


def corpus_words():
    with open(CORPUS, encoding="utf-8") as f:
        return f.read().split()


def held_out_words():
    """The last 10% of the corpus, as words: text the models saw least of."""
    with open(CORPUS, encoding="utf-8") as f:
        text = f.read()
    return text[int(len(text) * 0.9):].split()


def read_prompts(count=None):
    """The first `count` prompts of conf/bench_prompts.txt (all when None), `\\n` as newlines."""
    with open(os.path.join(HERE, "..", "..", "conf", "bench_prompts.txt"), encoding="utf-8") as f:
        prompts = [line.rstrip("\n").replace("\\n", "\n") for line in f if line.strip()]
    return prompts[:count]


def write_config(path, engine, trace=False, trace_capacity=None):
    """A serve config on port 0: `engine` maps [engine] keys to values (str values quoted);
    `trace_capacity` sizes the trace ring when given."""
    lines = ["[server]", "port = 0", "[engine]"]
    for key, value in engine.items():
        lines.append(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value}")
    lines += ["[trace]", f"enabled = {'true' if trace else 'false'}"]
    if trace_capacity is not None:
        lines.append(f"capacity = {trace_capacity}")
    lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path


@contextlib.contextmanager
def serving(specd, args, who):
    """`specd <args>` (a serve command) until the block ends: yields (process, http url).
    Exits with a message naming `who` when the server does not start."""
    server = subprocess.Popen([specd, *args], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if "listening on http://" not in line:
            sys.exit(f"{who}: specd serve did not start: {line!r}")
        yield server, line.split("listening on ")[1].split()[0]
    finally:
        server.terminate()
        server.wait(timeout=60)


def stream_completion(url, body):
    """POST /v1/completions with `body` (stream: true): yields each chunk; raises on an error chunk."""
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                return
            chunk = json.loads(line[len("data: "):])
            if "error" in chunk:
                raise RuntimeError(f"server answered {chunk}")
            yield chunk


async def ws_generate(url, body):
    """One `generate` request over the WebSocket at `url` (body: the request frame): the
    done frame's decode tokens/s and its spec stats; raises on any other frame."""
    import websockets  # only the WebSocket benches need python3-websockets; they check for it

    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps(body))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "done":
                return frame["timings"]["tokens_per_second"], frame.get("spec", {})
            if frame["type"] not in ("tokens", "accepted"):
                raise RuntimeError(f"server answered {frame}")
