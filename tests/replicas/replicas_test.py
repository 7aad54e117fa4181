#!/usr/bin/python3
"""Three `specd serve` replicas behind nginx on loopback (scripts/replicas.sh with
conf/nginx/specd.conf), driven by tools/loadgen. One scenario per run:

  greedy   loadgen over the WebSocket and over SSE through nginx: every greedy answer equals
           the one a single replica gives, and every replica served some of them.
  session  a conversation keyed by session id (?session= on the WebSocket, X-Session-Id over
           SSE): every turn lands on one replica, turns 2.. read cached prompt tokens, and only
           that replica's specd:prefix_cache_hits_total grows.
  kill     kill -9 of the replica serving a long keyed stream while WebSocket and SSE load
           runs: that stream fails (disconnected), the load loses at most the streams in flight
           (one per client) and only to broken streams, and new requests all succeed.
  drain    SIGTERM of the replica serving a long keyed stream under the same load: its /health
           answers 503 draining, the stream finishes, no request fails, the replica exits 0.

    /usr/bin/python3 tests/replicas/replicas_test.py --scenario greedy --specd build/specd --loadgen build/loadgen

Exits 77 (ctest SKIP_RETURN_CODE) when nginx is not installed. Standard library only.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPLICAS = 3
# Streams of loadgen's load are cut only mid-stream when their replica dies.
BROKEN_STREAM_CODES = {"disconnected", "read_failed", "truncated_stream"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path):
    """(status, body) of GET http://127.0.0.1:port/path; (0, error) when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, socket.timeout) as e:
        return 0, str(e)


def metrics(port):
    """Prometheus samples of one replica, summed over labels: name -> value (0 when absent:
    a counter has no sample before its first event)."""
    status, body = http_get(port, "/metrics")
    assert status == 200, f"GET /metrics on {port}: {status} {body}"
    out = collections.defaultdict(float)
    for line in body.splitlines():
        m = re.match(r"^([A-Za-z_:][\w:]*)(\{[^}]*\})? (\S+)$", line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print(f"ok: {message}")


class Replicas:
    """scripts/replicas.sh 3 in its own run directory; stopped (SIGTERM) on exit."""

    def __init__(self, specd, serve_args):
        self.dir = tempfile.mkdtemp(prefix="specd-replicas-test.")
        self.log_path = os.path.join(self.dir, "replicas.out")
        self.port = free_port()
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["bash", os.path.join(ROOT, "scripts/replicas.sh"), str(REPLICAS), "--port", str(self.port),
             "--run-dir", os.path.join(self.dir, "run"), "--specd", specd, "--", *serve_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        env_file = os.path.join(self.dir, "run", "replicas.env")
        deadline = time.monotonic() + 240  # model loads on busy cores
        while not os.path.exists(env_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.dump()
                raise AssertionError("scripts/replicas.sh did not get ready")
            time.sleep(0.2)
        env = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', open(env_file).read(), re.M))
        self.ports = [int(p) for p in env["REPLICA_PORTS"].split()]
        self.pids = [int(p) for p in env["REPLICA_PIDS"].split()]
        print(f"nginx on {self.port}, replicas on {self.ports}")

    def output(self):
        self.log.flush()
        return open(self.log_path).read()

    def dump(self):
        print("---- scripts/replicas.sh output", file=sys.stderr)
        print(self.output(), file=sys.stderr)
        run = os.path.join(self.dir, "run")
        for name in ["logs/error.log"] + [f"replicas/{i}.log" for i in range(REPLICAS)]:
            path = os.path.join(run, name)
            if os.path.exists(path):
                print(f"---- {name} (last lines)", file=sys.stderr)
                print("".join(open(path).readlines()[-20:]), file=sys.stderr)

    def replica_serving(self, before, after):
        """The one replica whose request count grew between two metrics() lists."""
        grew = [i for i in range(REPLICAS) if after[i]["specd_requests_total"] > before[i]["specd_requests_total"]]
        check(len(grew) == 1, f"one replica served the keyed requests (grew: {grew})")
        return grew[0]

    def metrics_all(self, live=None):
        return [metrics(p) if live is None or i in live else None for i, p in enumerate(self.ports)]

    def stop(self, failed):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                failed = True
                print("scripts/replicas.sh did not stop within 90 s of SIGTERM", file=sys.stderr)
        if failed:
            self.dump()
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return not failed


class Loadgen:
    """One tools/loadgen run (started now, read with result())."""

    def __init__(self, binary, port, transport, *flags):
        self.command = [binary, "--port", str(port), "--transport", transport, "--temperature", "0",
                        "--timeout", "180", *map(str, flags)]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self):
        out, err = self.proc.communicate(timeout=240)
        try:
            level = json.loads(out)["levels"][0]
        except (ValueError, KeyError, IndexError):
            raise AssertionError(f"loadgen {' '.join(self.command)} printed no report:\n{out}\n{err}")
        print(f"loadgen {' '.join(self.command[3:])}: {level['streams']}/{level['requests']} streams, "
              f"errors {level['errors_by_code']}, retried {level['retried']}")
        return level


def run_loadgen(binary, port, transport, *flags):
    return Loadgen(binary, port, transport, *flags).result()


def greedy(r, loadgen):
    for transport in ("ws", "sse"):
        one = run_loadgen(loadgen, r.ports[0], transport, "--clients", 1, "--requests", 1, "--max-tokens", 32,
                          "--answers")
        check(one["errors"] == 0 and len(one["answers"]) == 1, f"{transport}: one replica's greedy answer")
        before = r.metrics_all()
        many = run_loadgen(loadgen, r.port, transport, "--clients", 6, "--requests", 3, "--max-tokens", 32,
                           "--answers")
        after = r.metrics_all()
        check(many["errors"] == 0 and many["streams"] == 18, f"{transport}: 18 streams through nginx, no error")
        check(many["answers"] == {next(iter(one["answers"])): 18},
              f"{transport}: every answer through nginx equals one replica's")
        served = [after[i]["specd_requests_total"] - before[i]["specd_requests_total"] for i in range(REPLICAS)]
        check(all(n > 0 for n in served) and sum(served) == 18, f"{transport}: every replica served some: {served}")


def session(r, loadgen):
    turns = 4
    for transport in ("ws", "sse"):
        before = r.metrics_all()
        level = run_loadgen(loadgen, r.port, transport, "--clients", 1, "--turns", turns, "--max-tokens", 16,
                            "--turn-prompt", "Speak again.", "--session", f"conversation-{transport}")
        after = r.metrics_all()
        check(level["errors"] == 0 and level["streams"] == turns, f"{transport}: {turns} turns, no error")
        cached = [t["mean_cached_tokens"] for t in level["turns"]]
        check(all(c is not None and c > 0 for c in cached[1:]), f"{transport}: turns 2.. read cached tokens: {cached}")
        home = r.replica_serving(before, after)
        served = after[home]["specd_requests_total"] - before[home]["specd_requests_total"]
        check(served == turns, f"{transport}: replica {home} served all {turns} turns")
        hits = [after[i]["specd:prefix_cache_hits_total"] - before[i]["specd:prefix_cache_hits_total"]
                for i in range(REPLICAS)]
        check(hits[home] >= sum(c for c in cached[1:]) and all(h == 0 for i, h in enumerate(hits) if i != home),
              f"{transport}: prefix cache hits grew on replica {home} only: {hits}")


def keyed_victim(r, loadgen, key):
    """The replica a session key hashes to, found with one short keyed request."""
    before = r.metrics_all()
    probe = run_loadgen(loadgen, r.port, "ws", "--clients", 1, "--requests", 1, "--max-tokens", 2, "--session", key)
    check(probe["errors"] == 0, "the probe request succeeded")
    return r.replica_serving(before, r.metrics_all())


def running(port):
    return metrics(port)["specd:num_requests_running"]


def wait_for(what, condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def start_load(r, loadgen, requests):
    """WebSocket and SSE load without a key (least connections: on every replica)."""
    return [Loadgen(loadgen, r.port, t, "--clients", 3, "--requests", requests, "--max-tokens", 48, "--ignore-eos")
            for t in ("ws", "sse")]


def sentinel_under_load(r, loadgen, victim, requests):
    """A long keyed stream generating on `victim` (the key's replica) and the load started
    beside it, landed there too when it does within 10 s. Returns (sentinel, load) once the
    sentinel is generating still; a sentinel that ended first is replaced (at most 5 times)."""
    port = r.ports[victim]
    load = None
    for attempt in range(5):
        sentinel = Loadgen(loadgen, r.port, "ws", "--clients", 1, "--requests", 1, "--max-tokens", 1000,
                           "--ignore-eos", "--session", "sentinel")
        # Nothing else runs there before the load starts: running >= 1 is the sentinel.
        check(wait_for("the sentinel", lambda: running(port) >= 1, 120), "the sentinel generates on its replica")
        if load is None:
            load = start_load(r, loadgen, requests)
            wait_for("the load", lambda: running(port) >= 2, 10)
        if sentinel.proc.poll() is None:
            return sentinel, load
        print(f"the sentinel ended before the signal (attempt {attempt + 1}): another one")
        sentinel.result()
    raise AssertionError("no sentinel stream stayed in flight")


def kill(r, loadgen):
    # "sentinel-0": loadgen appends the client number to the --session prefix.
    victim = keyed_victim(r, loadgen, "sentinel")
    sentinel, load = sentinel_under_load(r, loadgen, victim, 12)
    os.kill(r.pids[victim], signal.SIGKILL)
    print(f"killed replica {victim} (pid {r.pids[victim]})")
    s = sentinel.result()
    check(s["errors_by_code"] == {"disconnected": 1}, "the stream in flight on the killed replica failed")
    for level in (l.result() for l in load):
        lost = level["errors"]
        check(set(level["errors_by_code"]) <= BROKEN_STREAM_CODES,
              f"the load lost streams only mid-stream: {level['errors_by_code']}")
        check(lost <= 3, f"at most one stream in flight per client lost: {lost}")
        check(level["requests"] == 36 and level["streams"] == 36 - lost, "every other request succeeded")
    for transport in ("ws", "sse"):
        after = run_loadgen(loadgen, r.port, transport, "--clients", 4, "--requests", 3, "--max-tokens", 16,
                            "--session", "after-kill")
        check(after["errors"] == 0 and after["streams"] == 12, f"{transport}: new requests after the kill succeed")
    check(wait_for("the exit report", lambda: f"replica {victim} (port {r.ports[victim]}) exited with status 137"
                   in r.output(), 30), "scripts/replicas.sh reported the killed replica")


def drain(r, loadgen):
    victim = keyed_victim(r, loadgen, "sentinel")
    port = r.ports[victim]
    # A connection that has not sent its request (specd waits timeouts.http_idle_seconds
    # for it) holds the drain open until it does, so /health is seen draining however
    # soon the streams finish.
    held = socket.create_connection(("127.0.0.1", port), timeout=30)
    sentinel, load = sentinel_under_load(r, loadgen, victim, 10)
    os.kill(r.pids[victim], signal.SIGTERM)
    print(f"SIGTERM to replica {victim} (pid {r.pids[victim]})")
    wait_for("not ready", lambda: http_get(port, "/health")[0] != 200, 30)
    status, body = http_get(port, "/health")
    check((status, body) == (503, '{"status":"draining"}'), f"the draining replica's /health: {status} {body}")
    held.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = held.recv(4096).decode()
    held.close()
    check(answer.startswith("HTTP/1.1 503"), "a connection opened before the signal is answered 503 too")
    s = sentinel.result()
    check(s["errors"] == 0 and s["finish_reasons"] == {"length": 1} and s["tokens"] == 1000,
          "the stream in flight on the draining replica finished")
    for level in (l.result() for l in load):
        check(level["errors"] == 0 and level["streams"] == 30,
              f"no request of the load failed ({level['retried']} resent after a refusal)")
    expected = f"replica {victim} (port {port}) exited with status 0"
    check(wait_for("the exit", lambda: expected in r.output(), 60), "the drained replica exited 0")
    after = run_loadgen(loadgen, r.port, "sse", "--clients", 4, "--requests", 3, "--max-tokens", 16)
    check(after["errors"] == 0, "new requests after the drain succeed")


SCENARIOS = {"greedy": greedy, "session": session, "kill": kill, "drain": drain}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--specd", required=True)
    parser.add_argument("--loadgen", required=True)
    args = parser.parse_args()
    if not (shutil.which("nginx") or os.access("/usr/sbin/nginx", os.X_OK)):
        print("replicas test skipped: nginx is not installed (apt-get install nginx; scripts/setup.sh does)")
        return 77
    started = time.monotonic()
    # A long shutdown deadline: the drain scenario's stream must finish, not be cancelled.
    r = Replicas(os.path.abspath(args.specd), ["--shutdown-deadline", "60"])
    failed = True
    try:
        SCENARIOS[args.scenario](r, os.path.abspath(args.loadgen))
        failed = False
    finally:
        stopped = r.stop(failed)
    if not stopped:
        return 1
    print(f"replicas {args.scenario}: all checks passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
