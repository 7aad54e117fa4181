#include "engine/tokenizer/bpe_tokenizer.hpp"

#include <algorithm>
#include <queue>
#include <system_error>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/bpe_tokenizer_file.hpp"
#include "engine/tokenizer/byte_level.hpp"
#include "engine/tokenizer/pretokenizer_regex.hpp"
#include "engine/tokenizer/tokenizer_config.hpp"
#include "engine/tokenizer/unicode_nfc.hpp"

namespace specd {

namespace {

namespace fs = std::filesystem;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Words are cached up to this many entries; the cache is then started afresh, which
// bounds memory on adversarial input while keeping the common words of a text hot.
constexpr size_t kCacheCapacity = 1 << 16;

}  // namespace

BpeTokenizer::BpeTokenizer(const fs::path& tokenizer_file, SpecialIdOverrides overrides) : file_(tokenizer_file) {
  BpeTokenizerFile file = read_bpe_tokenizer_file(tokenizer_file);
  build(file);
  std::error_code ec;
  const fs::path config_file = tokenizer_file.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_file, ec)) {
    const TokenizerConfig config = read_tokenizer_config(config_file);
    adds_bos_ = config.add_bos_token.value_or(true);
    const auto from_config = [&](const std::optional<std::string>& token) -> std::optional<int32_t> {
      if (!token) return std::nullopt;
      const auto id = token_id(*token);
      if (!id) {
        throw SpecdError(ErrorCode::bad_value,
                         config_file.string() + ": special token " + *token + " is not in " + file_.string());
      }
      return id;
    };
    if (!overrides.bos) overrides.bos = from_config(config.bos_token), overrides.bos_file = config_file;
    if (!overrides.eos) {
      if (auto eos = from_config(config.eos_token)) overrides.eos = std::vector<int32_t>{*eos};
      overrides.eos_file = config_file;
    }
  }
  set_special_ids(overrides);
}

BpeTokenizer::BpeTokenizer(BpeTokenizerFile parts, const fs::path& source, SpecialIdOverrides overrides)
    : file_(source) {
  build(parts);
  set_special_ids(overrides);
}

BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::build(BpeTokenizerFile& file) {
  int32_t max_id = -1;
  for (const auto& [text, id] : file.vocab) max_id = std::max(max_id, id);
  for (const auto& token : file.added_tokens) max_id = std::max(max_id, token.id);
  id_bytes_.resize(static_cast<size_t>(max_id + 1));
  known_id_.resize(static_cast<size_t>(max_id + 1));
  bytes_to_id_.reserve(file.vocab.size() + file.added_tokens.size());
  for (auto& [text, id] : file.vocab) {
    auto bytes = byte_level_to_bytes(text);
    if (!bytes || id < 0) {
      throw SpecdError(ErrorCode::tokenizer_error, file_.string() + ": vocabulary token \"" + text +
                                                       "\" is not a byte-level token with a valid id");
    }
    id_bytes_[static_cast<size_t>(id)] = *bytes;
    known_id_[static_cast<size_t>(id)] = true;
    bytes_to_id_.emplace(std::move(*bytes), id);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    if (it == bytes_to_id_.end()) {
      throw SpecdError(ErrorCode::tokenizer_error, file_.string() + ": no token for byte " + std::to_string(b));
    }
    byte_ids_[static_cast<size_t>(b)] = it->second;
  }
  merges_.reserve(file.merges.size());
  for (size_t rank = 0; rank < file.merges.size(); ++rank) {
    const auto& [left, right] = file.merges[rank];
    const auto left_bytes = byte_level_to_bytes(left), right_bytes = byte_level_to_bytes(right);
    const auto l = left_bytes ? bytes_to_id_.find(*left_bytes) : bytes_to_id_.end();
    const auto r = right_bytes ? bytes_to_id_.find(*right_bytes) : bytes_to_id_.end();
    const auto m = l != bytes_to_id_.end() && r != bytes_to_id_.end() ? bytes_to_id_.find(*left_bytes + *right_bytes)
                                                                      : bytes_to_id_.end();
    if (m == bytes_to_id_.end()) {
      throw SpecdError(ErrorCode::tokenizer_error,
                       file_.string() + ": merge \"" + left + " " + right + "\" uses a token not in the vocabulary");
    }
    // The first (lowest-rank) occurrence of a pair wins, as in HF.
    merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }
  for (auto& token : file.added_tokens) {
    id_bytes_[static_cast<size_t>(token.id)] = token.content;
    known_id_[static_cast<size_t>(token.id)] = true;
    bytes_to_id_[token.content] = token.id;
    added_by_first_byte_[static_cast<unsigned char>(token.content[0])].emplace_back(token.content, token.id);
  }
  for (auto& group : added_by_first_byte_) {
    std::stable_sort(group.begin(), group.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
  for (const auto& pattern : file.split_patterns) splitters_.push_back(std::make_unique<PretokenizerRegex>(pattern));
  ignore_merges_ = file.ignore_merges;
  nfc_ = file.nfc;
}

void BpeTokenizer::set_special_ids(const SpecialIdOverrides& overrides) {
  const auto check = [&](int32_t id, const char* what, const fs::path& from) {
    if (id < 0 || id >= vocab_size() || !known_id_[static_cast<size_t>(id)]) {
      throw SpecdError(ErrorCode::bad_value, from.string() + ": " + what + " " + std::to_string(id) +
                                                 " is outside the vocabulary of " + file_.string() + " (" +
                                                 std::to_string(vocab_size()) + " ids)");
    }
  };
  if (overrides.bos) check(*overrides.bos, "bos_token_id", overrides.bos_file);
  bos_id_ = overrides.bos;
  if (overrides.eos) {
    for (const int32_t id : *overrides.eos) check(id, "eos_token_id", overrides.eos_file);
    eos_ids_ = *overrides.eos;
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_bos && adds_bos_ && bos_id_) ids.push_back(*bos_id_);
  // Cut added tokens out, leftmost-longest; the text between them goes to BPE.
  size_t plain_start = 0;
  for (size_t i = 0; i < text.size();) {
    const auto& candidates = added_by_first_byte_[static_cast<unsigned char>(text[i])];
    const auto match = std::find_if(candidates.begin(), candidates.end(),
                                    [&](const auto& token) { return text.substr(i).starts_with(token.first); });
    if (match == candidates.end()) {
      ++i;
      continue;
    }
    encode_text(text.substr(plain_start, i - plain_start), ids);
    ids.push_back(match->second);
    i += match->first.size();
    plain_start = i;
  }
  encode_text(text.substr(plain_start), ids);
  return ids;
}

void BpeTokenizer::encode_text(std::string_view raw, std::vector<int32_t>& ids) const {
  if (raw.empty()) return;
  std::string normalized;
  if (nfc_) normalized = to_nfc(raw);
  const std::string_view text = nfc_ ? std::string_view(normalized) : raw;
  std::vector<std::string_view> words{text}, next;
  for (const auto& splitter : splitters_) {
    next.clear();
    for (const auto word : words) splitter->split(word, next);
    words.swap(next);
  }
  for (const auto word : words) encode_word(word, ids);
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (ignore_merges_) {
    // Llama 3: a word that is a token is that token, whatever the merges would build.
    if (const auto it = bytes_to_id_.find(std::string(word)); it != bytes_to_id_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  std::string key(word);
  {
    std::lock_guard lock(cache_mutex_);
    if (const auto it = cache_.find(key); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = merge_word(word);
  ids.insert(ids.end(), merged.begin(), merged.end());
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kCacheCapacity) cache_.clear();
  cache_.emplace(std::move(key), std::move(merged));
}

// Merges the lowest-ranked adjacent pair first (leftmost among equals) until no
// pair has a merge. A heap of candidate pairs over a linked list of symbols keeps
// this O(n log n) in the word length, so long runs (a 1 MB word) stay cheap.
std::vector<int32_t> BpeTokenizer::merge_word(std::string_view word) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1 at the ends
  };
  struct Candidate {
    int32_t rank, left, left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const auto n = static_cast<int32_t>(word.size());
  std::vector<Symbol> symbols(word.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) heap.push({it->second.rank, left, symbols[left].id, symbols[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = symbols[c.left];
    // Stale when either side has been merged away or changed since the push.
    if (left.id != c.left_id || left.next < 0 || symbols[left.next].id != c.right_id) continue;
    const int32_t right = left.next;
    left.id = merges_.at(pair_key(c.left_id, c.right_id)).merged;
    left.next = symbols[right].next;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    symbols[right].id = -1;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(c.left);
  }
  std::vector<int32_t> ids;
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (const int32_t id : ids) {
    check_id(id);
    bytes += id_bytes_[static_cast<size_t>(id)];
  }
  return utf8_lossy(bytes);
}

std::string BpeTokenizer::id_to_piece(int32_t id) const {
  check_id(id);
  return id_bytes_[static_cast<size_t>(id)];
}

int32_t BpeTokenizer::vocab_size() const { return static_cast<int32_t>(id_bytes_.size()); }

std::optional<int32_t> BpeTokenizer::bos_id() const { return bos_id_; }

const std::vector<int32_t>& BpeTokenizer::eos_ids() const { return eos_ids_; }

std::optional<int32_t> BpeTokenizer::token_id(std::string_view bytes) const {
  const auto it = bytes_to_id_.find(std::string(bytes));
  if (it == bytes_to_id_.end()) return std::nullopt;
  return it->second;
}

void BpeTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !known_id_[static_cast<size_t>(id)]) {
    throw SpecdError(ErrorCode::invalid_argument,
                     "token id " + std::to_string(id) + " is not in the vocabulary of " + file_.string());
  }
}

}  // namespace specd
