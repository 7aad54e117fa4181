#!/usr/bin/env bash
# Runs a client command against a live `specd serve` on loopback:
#
#   tests/support/with_server.sh SPECD_BINARY [serve options...] -- COMMAND [args...]
#
# Starts `SPECD_BINARY serve --host 127.0.0.1 --port P` on a free port P with the
# default model pair (plus any serve options given), waits until GET /health answers
# 200, runs COMMAND with SPECD_PORT=P and SPECD_BASE_URL=http://127.0.0.1:P in its
# environment, then stops the server with SIGTERM. Exits with COMMAND's status, or 1
# when the server does not come up or needs SIGKILL (no graceful stop within 15 s);
# the server's log is printed when anything fails.
set -uo pipefail

specd=$1
shift
serve_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  serve_args+=("$1")
  shift
done
[ "${1:-}" = "--" ] || { echo "usage: with_server.sh SPECD [serve options] -- COMMAND..." >&2; exit 2; }
shift

log=$(mktemp "${TMPDIR:-/tmp}/specd-serve.XXXXXX.log")
server_pid=
killed=0

# GET /health over bash's /dev/tcp; true when the answer is 200.
healthy() {
  local port=$1 status
  exec 3<> "/dev/tcp/127.0.0.1/$port" 2> /dev/null || return 1
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  IFS= read -r -t 5 status <&3
  exec 3<&- 3>&-
  [[ "$status" == "HTTP/1.1 200"* ]]
}

port_in_use() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2> /dev/null
  for _ in $(seq 150); do
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2> /dev/null; then
    echo "with_server: specd did not stop within 15 s of SIGTERM; killing it" >&2
    kill -KILL "$server_pid" 2> /dev/null
    killed=1
  fi
  wait "$server_pid" 2> /dev/null
  server_pid=
}

fail() {
  echo "with_server: $*" >&2
  echo "---- specd serve log ($log)" >&2
  tail -n 60 "$log" >&2
  stop_server
  exit 1
}

trap stop_server EXIT

# A free port: random candidates in the dynamic range, retried when serve cannot bind.
for attempt in 1 2 3 4 5; do
  port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
  port_in_use "$port" && continue
  "$specd" serve --host 127.0.0.1 --port "$port" "${serve_args[@]}" > "$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1200); do  # up to 120 s for the models to load
    healthy "$port" && break 2
    kill -0 "$server_pid" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$server_pid" 2> /dev/null; then
    fail "no 200 from GET /health on port $port within 120 s"
  fi
  wait "$server_pid" 2> /dev/null
  server_pid=
  grep -qi "address already in use" "$log" || fail "specd serve exited before answering /health"
done
[ -n "$server_pid" ] || fail "no free port found"

echo "with_server: specd serve on 127.0.0.1:$port (pid $server_pid)"
SPECD_PORT=$port SPECD_BASE_URL="http://127.0.0.1:$port" "$@"
status=$?
if [ "$status" -ne 0 ]; then
  echo "---- specd serve log ($log)" >&2
  tail -n 60 "$log" >&2
fi
stop_server
if [ "$killed" = 1 ] && [ "$status" -eq 0 ]; then
  echo "---- specd serve log ($log)" >&2
  tail -n 60 "$log" >&2
  status=1
fi
rm -f "$log"
exit "$status"
