#!/usr/bin/env bash
# Fails when a C++ source differs from what clang-format makes of it (.clang-format at
# the root). Fix with: clang-format-14 -i $(git ls-files '*.cpp' '*.hpp')
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if ! clang-format-14 --dry-run --Werror "${files[@]}" 2> /tmp/specd-format.log; then
  grep -m 20 "error:" /tmp/specd-format.log >&2 || true
  echo "check_format: FAIL: $(grep -c 'error:' /tmp/specd-format.log) places differ from clang-format-14 (fix: clang-format-14 -i \$(git ls-files '*.cpp' '*.hpp'))" >&2
  exit 1
fi
echo "check_format: ok: ${#files[@]} files"
