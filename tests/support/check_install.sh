#!/usr/bin/env bash
# Installs a build into a fresh prefix outside the source and build trees and runs the
# installed specd as a user would, with none of specd's path variables set: it must find
# the committed pair, its SentencePiece shim, conf/specd.toml and the chat page under the
# prefix alone (net/data_dir.hpp), and no source-tree path may be compiled into it.
#
#   tests/support/check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

build=$1
source_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d "${TMPDIR:-/tmp}/specd-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
unset SPECD_DATA_DIR SPECD_MODELS_DIR SPECD_SPM_SHIM

cmake --install "$build" --prefix "$prefix" > /dev/null
specd=$prefix/bin/specd
for f in "$specd" "$prefix/lib/specd/libspecd_spm_shim.so" "$prefix/share/specd/conf/specd.toml" \
  "$prefix/share/specd/models/target/model.safetensors" "$prefix/share/specd/tools/web/index.html"; do
  [ -f "$f" ] || { echo "check_install: FAIL: not installed: $f" >&2; exit 1; }
done

# The program's read-only data (string literals), not its debug information.
if readelf -p .rodata "$specd" | grep -F -q "$source_dir/"; then
  echo "check_install: FAIL: $specd holds a path into $source_dir:" >&2
  readelf -p .rodata "$specd" | grep -F "$source_dir/" | head -n 5 >&2
  exit 1
fi

out=$("$specd" generate --prompt "ROMEO:" --max-tokens 4 --json)
grep -Eq '"token_ids":\[[0-9]+(,[0-9]+){3}\]' <<< "$out" ||
  { echo "check_install: FAIL: generate printed: $out" >&2; exit 1; }

# serve reads the installed conf/specd.toml and serves the installed chat page.
bash "$here/with_server.sh" "$specd" -- bash -c '
  curl -sf "$SPECD_BASE_URL/" | grep -q "<html" || { echo "check_install: FAIL: no chat page at /" >&2; exit 1; }
  curl -sf "$SPECD_BASE_URL/v1/models" | grep -q "\"id\":\"specd-tiny\"" ||
    { echo "check_install: FAIL: /v1/models does not serve specd-tiny" >&2; exit 1; }'
echo "check_install: ok: $prefix/bin/specd generated and served from the prefix alone"
