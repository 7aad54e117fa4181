#pragma once
// A model directory's tokenizer as GGUF `tokenizer.ggml.*` metadata, as llama.cpp's
// converter writes it, so a file `specd quantize` writes carries its own vocabulary: a
// byte-level BPE tokenizer.json as `gpt2` (tokens, types, merges, `pre` llama-bpe, qwen2
// or gpt-2), a tokenizer.model (or a SentencePiece-BPE tokenizer.json) as `llama`
// (pieces, scores, types); BOS/EOS as load_tokenizer reads them; the chat template of
// tokenizer_config.json.
#include <cstdint>
#include <filesystem>

#include "engine/checkpoint/gguf_writer.hpp"

namespace specd {

// model_vocab: the model's vocab_size; ids the tokenizer lacks below it (Qwen's 151936
// against 151669 tokens) are written as unused "[PAD<id>]" tokens, as llama.cpp's
// converter does, so the file's vocabulary matches its embedding. Throws SpecdError: the
// tokenizer's load errors, unsupported_architecture for a pre-tokenizer GGUF has no name
// for, bad_value for a tokenizer larger than the model.
void add_gguf_vocab(const std::filesystem::path& model_dir, int64_t model_vocab, GgufWriter& writer);

}  // namespace specd
