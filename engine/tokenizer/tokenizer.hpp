#pragma once
// Tokenizer interface shared by every tokenizer kind specd loads from a model
// directory (SentencePiece `tokenizer.model` now; HF `tokenizer.json` BPE later).
// Implementations are immutable after load and safe to call from any thread.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Encodes text; prepends BOS when add_bos and the model has one.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos) const = 0;
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // The text of one piece as it appears in decoded output (byte tokens give raw bytes).
  virtual std::string id_to_piece(int32_t id) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  // Every id that ends generation (the model directory may declare several).
  virtual const std::vector<int32_t>& eos_ids() const = 0;
};

// Special ids declared by a model directory's config files; they win over the
// ids stored in the tokenizer file.
struct SpecialIdOverrides {
  std::optional<int32_t> bos;
  std::optional<std::vector<int32_t>> eos;
  // Where each came from, named when an id is outside the vocabulary.
  std::filesystem::path bos_file;
  std::filesystem::path eos_file;
};

// Loads the tokenizer found in a model directory. BOS/EOS ids come from the
// directory's generation_config.json / config.json when present, else from the
// tokenizer file itself. A path ending in .gguf is read as a llama.cpp GGUF file's
// tokenizer metadata instead (gguf_tokenizer.hpp). Throws SpecdError naming the file
// and problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

}  // namespace specd
