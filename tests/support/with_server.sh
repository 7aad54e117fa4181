#!/usr/bin/env bash
# Runs a client command against a live `specd serve` on loopback:
#
#   tests/support/with_server.sh SPECD_BINARY [serve options...] -- COMMAND [args...]
#
# Starts `SPECD_BINARY serve --host 127.0.0.1 --port 0` (the server picks a free port P
# and prints it) with the default config and model pair plus any serve options given,
# waits until GET /health answers 200, runs COMMAND with SPECD_PORT=P,
# SPECD_BASE_URL=http://127.0.0.1:P and SPECD_SERVER_PID (the server's pid) in its environment, then stops the server with
# SIGTERM. Exits with COMMAND's status, or 1 when the server does not come up or needs
# SIGKILL (no graceful stop within 15 s); the server's log is printed when anything fails.
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
# A --token among the serve options: /health needs it too, and the command gets it as SPECD_TOKEN.
token=
for ((i = 0; i + 1 < ${#serve_args[@]}; i++)); do
  [ "${serve_args[i]}" = "--token" ] && token=${serve_args[i + 1]}
done

log=$(mktemp "${TMPDIR:-/tmp}/specd-serve.XXXXXX.log")
server_pid=
killed=0

# GET /health over bash's /dev/tcp; true when the answer is 200.
healthy() {
  local port=$1 status
  { exec 3<> "/dev/tcp/127.0.0.1/$port"; } 2> /dev/null || return 1
  local auth=
  [ -n "$token" ] && auth="Authorization: Bearer $token"$'\r\n'
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n' "$auth" >&3
  IFS= read -r -t 5 status <&3
  exec 3<&- 3>&-
  [[ "$status" == "HTTP/1.1 200"* ]]
}

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

# --port 0: the server binds a free port and prints its URL ("listening on http://...").
"$specd" serve --host 127.0.0.1 --port 0 "${serve_args[@]}" > "$log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1200); do  # up to 120 s for the models to load
  kill -0 "$server_pid" 2> /dev/null || { wait "$server_pid"; server_pid=; fail "specd serve exited before listening"; }
  if [ -z "$port" ]; then
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
  fi
  [ -n "$port" ] && healthy "$port" && break
  sleep 0.1
done
[ -n "$port" ] || fail "specd serve printed no 'listening on' line within 120 s"
healthy "$port" || fail "no 200 from GET /health on port $port within 120 s"

echo "with_server: specd serve on 127.0.0.1:$port (pid $server_pid)"
SPECD_PORT=$port SPECD_BASE_URL="http://127.0.0.1:$port" SPECD_TOKEN=$token SPECD_SERVER_PID=$server_pid "$@"
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
