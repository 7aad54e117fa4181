#!/usr/bin/env bash
# Run under with_server.sh: checks which model the server serves. /v1/models must list
# NAME alone, and a greedy completion must report drafted tokens (`drafted`: a draft
# model runs) or none (`target-only`).
#
#   served_model.sh NAME drafted|target-only
set -euo pipefail

name=$1
mode=$2
models=$(curl -sf "$SPECD_BASE_URL/v1/models")
[[ "$models" == *'"data":[{"id":"'"$name"'",'* ]] ||
  { echo "served_model: FAIL: /v1/models is not $name alone: $models" >&2; exit 1; }
body=$(curl -sf "$SPECD_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"ROMEO:","max_tokens":8,"temperature":0}')
if [ "$mode" = drafted ]; then pattern='"drafted":[1-9]'; else pattern='"drafted":0,'; fi
grep -Eq "\"model\":\"$name\".*$pattern" <<< "$body" ||
  { echo "served_model: FAIL: not $mode as $name: $body" >&2; exit 1; }
echo "served_model: ok: $name, $mode"
