#!/usr/bin/env bash
# Fails when a header given reaches a libtorch header (ATen/, torch/, c10/) through its
# includes: the actors' headers and the public Engine header stay torch-free, so their
# users compile without libtorch's headers.
#
#   tests/support/check_torch_free_headers.sh CXX SOURCE_DIR HEADER...
set -euo pipefail
cxx=$1 src=$2
shift 2
failed=0
for header in "$@"; do
  torch=$(echo "#include \"$header\"" | "$cxx" -std=c++20 -I"$src" -x c++ -fsyntax-only -H - 2>&1 \
          | grep -E '^\.+ .*/(ATen|torch|c10)/' | head -3 || true)
  if [ -n "$torch" ]; then
    echo "FAIL: $header reaches libtorch:"; echo "$torch"
    failed=1
  fi
done
[ "$failed" = 0 ] && echo "torch-free: $# headers"
exit "$failed"
