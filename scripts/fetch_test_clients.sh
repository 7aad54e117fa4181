#!/usr/bin/env bash
# Installs the real clients the loopback tests drive into third_party/node-clients/
# (gitignored): the official OpenAI client (`openai`, tests/openai_client/), LangChain's
# (`@langchain/openai` with its peer `@langchain/core`) and the Vercel AI SDK (`ai` with
# `@ai-sdk/openai-compatible` and its peer `zod`, tests/openai_client/frameworks_test.mjs),
# and `ws`, the WebSocket library the Chromium test speaks the DevTools protocol with
# (tests/web/). Pinned versions; idempotent: does nothing when they are already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# openai 6.x is the last major that runs on Debian's and NodeSource's node 20 (7.x needs 22).
packages=(openai@6.30.1 ws@8.18.3 @langchain/openai@0.6.9 @langchain/core@0.3.80 ai@5.0.277
  @ai-sdk/openai-compatible@1.0.61 zod@3.25.76)
dest=third_party/node-clients

installed() {
  local name=${1%@*} version=${1##*@}
  grep -q "\"version\": \"$version\"" "$dest/node_modules/$name/package.json" 2>/dev/null
}
missing=0
for p in "${packages[@]}"; do installed "$p" || missing=1; done
[ "$missing" = 0 ] && exit 0

command -v npm > /dev/null || { echo "fetch_test_clients: npm not found" >&2; exit 1; }
mkdir -p "$dest"
# A private package.json so npm installs here and never walks up to another project.
[ -f "$dest/package.json" ] || echo '{"name": "specd-test-clients", "private": true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error --save-exact "${packages[@]}"
for p in "${packages[@]}"; do installed "$p" || { echo "fetch_test_clients: $p did not install" >&2; exit 1; }; done
echo "fetch_test_clients: $dest/node_modules (${packages[*]})"
