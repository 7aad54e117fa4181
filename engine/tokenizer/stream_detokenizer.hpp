#pragma once
// Incremental detokenization for streaming: text of each newly accepted token as soon
// as it is complete. A token that ends inside a UTF-8 character (byte-fallback pieces)
// yields nothing until the character is whole. Decodes only a short window of recent
// tokens per call (the prefix/read offsets technique of HF text-generation-inference
// and vLLM), so the cost per token does not grow with the output. One per request;
// not thread-safe.
#include <cstdint>
#include <string>
#include <vector>

namespace specd {

class Tokenizer;

class StreamDetokenizer {
 public:
  explicit StreamDetokenizer(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Adds one token; returns the text it completes (possibly empty).
  std::string push(int32_t token);
  // The text still held back when the stream ends (an unfinished character decodes as U+FFFD).
  std::string flush();

 private:
  std::string decode_from(size_t begin, size_t end) const;

  const Tokenizer& tokenizer_;
  std::vector<int32_t> tokens_;
  size_t prefix_offset_ = 0;  // window start: decoding from here gives stable text
  size_t read_offset_ = 0;    // tokens before this have been emitted
};

}  // namespace specd
