#!/usr/bin/env bash
# N `specd serve` replicas on loopback behind Debian's nginx (conf/nginx/specd.conf), in
# the foreground; Ctrl-C (or SIGTERM) drains and stops them all.
#
#   bash scripts/replicas.sh N [--port 8080] [--run-dir build/replicas] [--specd build/specd]
#                              [--config conf/specd.toml] [-- extra `specd serve` options]
#
# Each replica gets its share of the CPUs this script may use (taskset: with N <= CPUs a
# block of CPUs each, else CPU i mod CPUs; specd sizes its threads from its affinity),
# binds a free loopback port and logs to RUN_DIR/replicas/I.log. nginx runs with
# RUN_DIR as its prefix: its config (the template filled in with the replicas' ports and
# the config's timeouts), pid, logs (access.log names the replica of each request) and
# temporary files all live there, so no root and nothing under /etc/nginx or
# /var/log/nginx (run as root, nginx's workers run as nobody). Once every replica answers GET /health and nginx does,
# RUN_DIR/replicas.env holds NGINX_PORT, NGINX_PID, REPLICA_PORTS and REPLICA_PIDS
# (space-separated, replica 0 first) and a `replicas: ready` line is printed.
#
# A replica that exits (SIGTERM drains it: /health 503, in-flight streams finish, exit 0)
# is reported and the others keep serving; when nginx or the last replica exits, or on
# Ctrl-C, everything stops.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -ge 1 ] || usage
count=$1
shift
[[ "$count" =~ ^[1-9][0-9]*$ ]] || usage
port=8080
run_dir=build/replicas
specd=build/specd
config=conf/specd.toml
serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=$2; shift 2 ;;
    --run-dir) run_dir=$2; shift 2 ;;
    --specd) specd=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    *) usage ;;
  esac
done

nginx=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[ -x "$nginx" ] || { echo "replicas: nginx not found (apt-get install nginx; scripts/setup.sh does)" >&2; exit 3; }
[ -x "$specd" ] || { echo "replicas: $specd not found: build it first (scripts/setup.sh)" >&2; exit 2; }
[ -f "$config" ] || { echo "replicas: no config file $config" >&2; exit 2; }

mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
config=$(cd "$(dirname "$config")" && pwd)/$(basename "$config")
rm -rf "$run_dir/logs" "$run_dir/temp" "$run_dir/replicas" "$run_dir/replicas.env"
mkdir -p "$run_dir/logs" "$run_dir/replicas" "$run_dir/temp"/{client_body,proxy,fastcgi,uwsgi,scgi}

pids=()
ports=()
nginx_pid=
stopping=0

log() { echo "replicas: $*" >&2; }

stop_all() {
  stopping=1
  log "stopping nginx and ${#pids[@]} replicas"
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2> /dev/null
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null; done
  for _ in $(seq 300); do  # 30 s: the replicas' shutdown deadline and some
    local alive=0
    for pid in "${pids[@]}" $nginx_pid; do kill -0 "$pid" 2> /dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}" $nginx_pid; do
    if kill -0 "$pid" 2> /dev/null; then
      log "pid $pid did not stop within 30 s: killing it"
      kill -KILL "$pid" 2> /dev/null
    fi
  done
  wait 2> /dev/null
}

fail() {
  log "$*"
  stop_all
  exit 1
}

trap 'stop_all; exit 0' INT TERM

# 200 from GET http://127.0.0.1:PORT/health (with the bearer token when one is configured).
token=$(python3 -c 'import re, sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb")).get("server", {}).get("auth_token", ""))' "$config")
for ((i = 0; i + 1 < ${#serve_args[@]}; i++)); do
  [ "${serve_args[i]}" = "--token" ] && token=${serve_args[i + 1]}
done
healthy() {
  local auth=()
  [ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${auth[@]}" "http://127.0.0.1:$1/health")" = 200 ]
}

# The CPUs this script may use, and replica i's share of them.
mapfile -t cpus < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))')
cpu_share() {
  local i=$1 n=${#cpus[@]}
  if [ "$count" -ge "$n" ]; then
    echo "${cpus[i % n]}"
  else
    local from=$((i * n / count)) to=$(((i + 1) * n / count)) list=
    for ((c = from; c < to; c++)); do list+=${list:+,}${cpus[c]}; done
    echo "$list"
  fi
}

for ((i = 0; i < count; i++)); do
  share=$(cpu_share "$i")
  taskset -c "$share" "$specd" serve --config "$config" --host 127.0.0.1 --port 0 "${serve_args[@]}" \
    > "$run_dir/replicas/$i.log" 2>&1 &
  pids+=($!)
  log "replica $i: pid ${pids[i]}, CPUs $share, log $run_dir/replicas/$i.log"
done

for ((i = 0; i < count; i++)); do
  ports[i]=
  for _ in $(seq 1200); do  # up to 120 s for the models to load
    kill -0 "${pids[i]}" 2> /dev/null || fail "replica $i exited before it was ready: $(tail -n 5 "$run_dir/replicas/$i.log")"
    if [ -z "${ports[i]}" ]; then
      ports[i]=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$run_dir/replicas/$i.log" | head -n 1)
    fi
    [ -n "${ports[i]}" ] && healthy "${ports[i]}" && break
    sleep 0.1
  done
  [ -n "${ports[i]}" ] && healthy "${ports[i]}" || fail "replica $i not ready within 120 s"
  log "replica $i: ready on 127.0.0.1:${ports[i]}"
done

# The template, filled in: the replicas, the config's limits and timeouts, the run directory.
user=
[ "$(id -u)" = 0 ] && user="user nobody nogroup;" && chown -R nobody:nogroup "$run_dir/temp"
python3 - "$config" "$run_dir" "$port" "$user" "${ports[@]}" > "$run_dir/nginx.conf" << 'PY' || fail "cannot write nginx.conf"
import re, sys, tomllib
config, run_dir, port, user, *ports = sys.argv[1:]
with open(config, "rb") as f:
    toml = tomllib.load(f)
def key(section, name, default):
    return toml.get(section, {}).get(name, default)
servers = "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;" for p in ports)
fields = {
    "RUN_DIR": run_dir, "USER": user, "LISTEN": f"127.0.0.1:{port}", "SERVERS": servers,
    "TRIES": str(len(ports)),
    "MAX_BODY_BYTES": str(key("limits", "max_body_bytes", 1048576)),
    "HTTP_IDLE_SECONDS": str(int(key("timeouts", "http_idle_seconds", 30))),
    "WS_IDLE_SECONDS": str(int(key("timeouts", "ws_idle_seconds", 60))),
}
text = open("conf/nginx/specd.conf").read()
for name, value in fields.items():
    text = text.replace(f"@{name}@", value)
assert not re.search(r"@[A-Z_]+@", text), "unfilled template field"
sys.stdout.write(text)
PY

"$nginx" -p "$run_dir" -c "$run_dir/nginx.conf" -e "$run_dir/logs/error.log" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 100); do
  kill -0 "$nginx_pid" 2> /dev/null || fail "nginx exited: $(tail -n 5 "$run_dir/logs/error.log")"
  healthy "$port" && break
  sleep 0.1
done
healthy "$port" || fail "nginx on port $port does not answer /health"

{
  echo "NGINX_PORT=$port"
  echo "NGINX_PID=$nginx_pid"
  echo "REPLICA_PORTS=\"${ports[*]}\""
  echo "REPLICA_PIDS=\"${pids[*]}\""
} > "$run_dir/replicas.env.tmp" && mv "$run_dir/replicas.env.tmp" "$run_dir/replicas.env"
echo "replicas: ready: http://127.0.0.1:$port (WebSocket ws://127.0.0.1:$port/v1/ws) -> $count replicas on ports ${ports[*]}; run directory $run_dir"

# Foreground: report each exit; stop when nginx or the last replica is gone.
waiting=("${pids[@]}")
while [ "$stopping" = 0 ]; do
  unset ended
  wait -n -p ended "${waiting[@]}" "$nginx_pid"
  status=$?
  [ "$stopping" = 1 ] && break
  [ -n "${ended:-}" ] || continue  # a signal interrupted the wait
  if [ "$ended" = "$nginx_pid" ]; then
    nginx_pid=
    fail "nginx exited with status $status"
  fi
  for ((i = 0; i < count; i++)); do
    [ "${pids[i]}" = "$ended" ] && log "replica $i (port ${ports[i]}) exited with status $status"
  done
  remaining=()
  for pid in "${waiting[@]}"; do [ "$pid" = "$ended" ] || remaining+=("$pid"); done
  waiting=("${remaining[@]}")
  [ ${#waiting[@]} -gt 0 ] || fail "no replica left"
done
