#!/usr/bin/python3
"""specd serve driven by a second, independent WebSocket client (Debian python3-websockets).

Starts `specd serve --port 0`, then over loopback: 8 streams on one connection and 8 on
their own connections each receive exactly the target-only greedy tokens of
`specd generate --no-spec`; bad frames get their error codes and the connection keeps
serving; SIGTERM with a long stream in flight ends it with done/cancelled, closes the
socket with 1012, and the server exits 0. `specd generate` runs the same Engine as the
server: for each speculation mode (K = 4, auto, prompt lookup, target-only) and for a
seeded sampled request, its ids equal the server's for the same request.

    /usr/bin/python3 tests/python/ws_client_test.py build/specd
"""
import asyncio
import json
import signal
import subprocess
import sys

try:
    import websockets
except ImportError:
    sys.exit("python3-websockets is missing: apt-get install python3-websockets (scripts/setup.sh does)")

SPECD = sys.argv[1] if len(sys.argv) > 1 else "build/specd"
PROMPTS = ["ROMEO:\n", "JULIET:\nO God", "HAMLET:\nTo be, or not to be", "LUCIO:\nGood morrow",
           "MENENIUS:\n", "GLOUCESTER:\nNow is the winter", "First Citizen:\n", "KING HENRY VI:\nO God"]
MAX_TOKENS = 20


def expected_tokens(prompts):
    """Target-only greedy ids from `specd generate --no-spec`, the runs two at a time."""
    out = []
    for i in range(0, len(prompts), 2):
        runs = [subprocess.Popen([SPECD, "generate", "--prompt", p, "--max-tokens", str(MAX_TOKENS), "--no-spec", "--json"],
                                 stdout=subprocess.PIPE, text=True) for p in prompts[i:i + 2]]
        for run in runs:
            stdout, _ = run.communicate()
            assert run.returncode == 0
            out.append(json.loads(stdout)["token_ids"])
    return out


def generate(rid, prompt, max_tokens=MAX_TOKENS, **extra):
    return json.dumps({"type": "generate", "id": rid, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, **extra})


async def collect(ws, ids):
    """Frames until every id ended: {id: {"tokens": [...], "done": frame|None, "error": code|None}}."""
    out = {i: {"tokens": [], "done": None, "error": None} for i in ids}
    pending = set(ids)
    while pending:
        frame = json.loads(await ws.recv())
        entry = out.setdefault(frame["id"], {"tokens": [], "done": None, "error": None})
        if frame["type"] == "tokens":
            entry["tokens"] += frame["token_ids"]
        elif frame["type"] == "done":
            entry["done"] = frame
            pending.discard(frame["id"])
        elif frame["type"] == "error":
            entry["error"] = frame["code"]
            pending.discard(frame["id"])
    return out


async def one_connection_many_streams(url, expected):
    async with websockets.connect(url) as ws:
        for i, p in enumerate(PROMPTS):
            await ws.send(generate(f"m{i}", p))
        got = await collect(ws, [f"m{i}" for i in range(len(PROMPTS))])
    for i in range(len(PROMPTS)):
        assert got[f"m{i}"]["tokens"] == expected[i], (i, got[f"m{i}"], expected[i])
        assert got[f"m{i}"]["done"]["usage"]["completion_tokens"] == len(expected[i])


async def own_connection(url, i, expected):
    async with websockets.connect(url) as ws:
        await ws.send(generate(f"c{i}", PROMPTS[i], speculative={"k": 1 + i % 5}))
        got = await collect(ws, [f"c{i}"])
    assert got[f"c{i}"]["tokens"] == expected[i], (i, got[f"c{i}"], expected[i])


async def bad_input_keeps_connection(url, expected):
    async with websockets.connect(url) as ws:
        cases = [("{oops", "malformed_json", None), (b"\x00\x01", "binary_frame", None),
                 (json.dumps({"type": "fly", "id": "z"}), "unknown_type", "z"),
                 (json.dumps({"type": "cancel", "id": "ghost"}), "unknown_id", "ghost"),
                 (generate("t", "x", temperature=-1), "bad_value", "t")]
        for message, code, rid in cases:
            await ws.send(message)
            frame = json.loads(await ws.recv())
            assert frame["type"] == "error" and frame["code"] == code and frame["id"] == rid, (message, frame)
        await ws.send(generate("after", PROMPTS[0]))
        got = await collect(ws, ["after"])
        assert got["after"]["tokens"] == expected[0]


PARITY_MODES = [([], {}), (["--k", "auto"], {"k": "auto"}), (["--drafter", "lookup"], {"drafter": "lookup"}),
                (["--no-spec"], {"enabled": False}),
                (["--k", "2", "--temperature", "0.8", "--seed", "7"], {"k": 2, "temperature": 0.8, "seed": 7})]


async def cli_matches_server(url):
    """The same request through `specd generate --json` and through the server: equal ids."""
    async with websockets.connect(url) as ws:
        for m, (flags, spec) in enumerate(PARITY_MODES):
            for i, prompt in enumerate(PROMPTS[:3]):
                cli = subprocess.run([SPECD, "generate", "--prompt", prompt, "--max-tokens", "32", "--json", *flags],
                                     stdout=subprocess.PIPE, text=True, check=True)
                want = json.loads(cli.stdout)["token_ids"]
                sampling = {k: v for k, v in spec.items() if k in ("temperature", "seed")}
                speculative = {k: v for k, v in spec.items() if k not in sampling}
                await ws.send(generate(f"p{m}.{i}", prompt, max_tokens=32, speculative=speculative, **sampling))
                got = await collect(ws, [f"p{m}.{i}"])
                assert got[f"p{m}.{i}"]["tokens"] == want, (flags, prompt, got[f"p{m}.{i}"], want)


async def shutdown_cancels(url, server):
    async with websockets.connect(url) as ws:
        await ws.send(generate("long", PROMPTS[1], max_tokens=900, ignore_eos=True))
        first = json.loads(await ws.recv())
        assert first["type"] == "tokens"
        server.send_signal(signal.SIGTERM)
        got = await collect(ws, ["long"])
        assert got["long"]["done"]["finish_reason"] == "cancelled", got["long"]
        try:
            await ws.recv()
            raise AssertionError("the server did not close the connection")
        except websockets.exceptions.ConnectionClosed as closed:
            assert closed.code == 1012, closed.code


async def main():
    expected = expected_tokens(PROMPTS)
    server = subprocess.Popen([SPECD, "serve", "--port", "0", "--shutdown-deadline", "0.5"],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert "listening on http://" in line, line
        http = line.split("listening on ")[1].split()[0]
        url = "ws" + http[4:] + "/v1/ws"
        await one_connection_many_streams(url, expected)
        await asyncio.gather(*(own_connection(url, i, expected) for i in range(len(PROMPTS))))
        await bad_input_keeps_connection(url, expected)
        await cli_matches_server(url)
        await shutdown_cancels(url, server)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
    print("python websockets client: all checks passed")


asyncio.run(main())
