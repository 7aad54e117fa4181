#!/usr/bin/env bash
# `specd chat-template` prints the render and nothing else: its stdout must equal the
# text Jinja2 rendered, byte for byte (no added newline), and stderr must be empty.
# Usage: chat_template_cli.sh SPECD TEMPLATE INPUT EXPECTED
set -euo pipefail
specd=$1 template=$2 input=$3 expected=$4
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$specd" chat-template --template "$template" --input "$input" >"$out" 2>"$err"
if ! cmp -s "$out" "$expected"; then
  echo "render differs from $expected:"
  diff "$out" "$expected" || true
  exit 1
fi
if [[ -s $err ]]; then
  echo "unexpected stderr:"
  cat "$err"
  exit 1
fi
echo "render equal to $expected ($(wc -c <"$out") bytes)"
