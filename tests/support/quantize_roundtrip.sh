#!/usr/bin/env bash
# `specd quantize` writes a checkpoint that loads as it is: for int8 and int4, the
# written checkpoint's greedy ids and perplexity equal those of the float checkpoint
# quantized at load (--weights), and it is a fraction of the float file's size.
# The GGUF Q8_0 file of `--type q8_0` likewise equals int8 at load.
#
#   tests/support/quantize_roundtrip.sh SPECD MODEL_DIR TEXT_FILE
set -euo pipefail
specd=$1 model=$2 text=$3
out=$(mktemp -d "${TMPDIR:-/tmp}/quantize_roundtrip.XXXXXX")
trap 'rm -rf "$out"' EXIT

ids() { "$specd" generate --model "$@" --no-spec --prompt "ROMEO:" --max-tokens 32 --json | grep -o '"token_ids":\[[0-9,]*\]'; }
ppl() { "$specd" perplexity --model "$@" --text "$text" --last-fraction 0.02 --json | grep -o '"perplexity":[0-9.e+-]*'; }

for type in int8 int4; do
  "$specd" quantize --from "$model" --to "$out/$type" --type "$type"
  written=$(ids "$out/$type") at_load=$(ids "$model" --weights "$type")
  [ "$written" = "$at_load" ] || { echo "FAIL $type greedy ids: written $written, at load $at_load" >&2; exit 1; }
  written_ppl=$(ppl "$out/$type") at_load_ppl=$(ppl "$model" --weights "$type")
  [ "$written_ppl" = "$at_load_ppl" ] || { echo "FAIL $type: written $written_ppl, at load $at_load_ppl" >&2; exit 1; }
  float_bytes=$(stat -c %s "$model/model.safetensors") bytes=$(stat -c %s "$out/$type/model.safetensors")
  [ $((bytes * 100 / float_bytes)) -le 60 ] || { echo "FAIL $type file is $bytes bytes of $float_bytes" >&2; exit 1; }
  echo "$type: $written_ppl, $bytes bytes (float $float_bytes), ids $written"
done

# GGUF Q8_0 (`--type q8_0 --to FILE.gguf`): every matrix in llama.cpp's Q8_0 blocks, as
# int8 at load quantizes them, and the folder's tokenizer inside: the same ids and perplexity.
"$specd" quantize --from "$model" --to "$out/q8_0.gguf" --type q8_0
written=$(ids "$out/q8_0.gguf") at_load=$(ids "$model" --weights int8)
[ "$written" = "$at_load" ] || { echo "FAIL q8_0 GGUF greedy ids: written $written, int8 at load $at_load" >&2; exit 1; }
written_ppl=$(ppl "$out/q8_0.gguf") at_load_ppl=$(ppl "$model" --weights int8)
[ "$written_ppl" = "$at_load_ppl" ] || { echo "FAIL q8_0 GGUF: written $written_ppl, int8 at load $at_load_ppl" >&2; exit 1; }
echo "q8_0 GGUF: $written_ppl, $(stat -c %s "$out/q8_0.gguf") bytes, ids $written"
