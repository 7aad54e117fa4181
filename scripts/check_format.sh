#!/usr/bin/env bash
# Fails when a C++ source differs from what clang-format makes of it (.clang-format at
# the root; Debian bookworm's clang-format is version 14). Fix with:
#   clang-format -i $(git ls-files '*.cpp' '*.hpp' '*.h')
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! clang-format --dry-run --Werror "${files[@]}" 2> "$log"; then
  grep -m 20 "error:" "$log" >&2 || true
  echo "check_format: FAIL: $(grep -c 'error:' "$log") places differ from clang-format" \
    "(fix: clang-format -i \$(git ls-files '*.cpp' '*.hpp' '*.h'))" >&2
  exit 1
fi
echo "check_format: ok: ${#files[@]} files"
