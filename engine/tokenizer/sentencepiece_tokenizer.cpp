#include "engine/tokenizer/sentencepiece_tokenizer.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <variant>

#include "engine/base/errors.hpp"
#include "engine/tokenizer/spm_shim/spm_shim.h"

namespace specd {
namespace {

namespace fs = std::filesystem;

// The shim's entry points, resolved once from its private link-map namespace.
struct SpmApi {
  decltype(&specd_spm_abi_version) abi_version;
  decltype(&specd_spm_create) create;
  decltype(&specd_spm_create_from_proto) create_from_proto;
  decltype(&specd_spm_destroy) destroy;
  decltype(&specd_spm_encode) encode;
  decltype(&specd_spm_decode) decode;
  decltype(&specd_spm_id_to_piece) id_to_piece;
  decltype(&specd_spm_piece_count) piece_count;
  decltype(&specd_spm_bos_id) bos_id;
  decltype(&specd_spm_eos_id) eos_id;
  decltype(&specd_spm_unk_id) unk_id;
  decltype(&specd_spm_pad_id) pad_id;
  decltype(&specd_spm_is_byte) is_byte;
  decltype(&specd_spm_is_control) is_control;
  decltype(&specd_spm_is_unknown) is_unknown;
  decltype(&specd_spm_train) train;
};

constexpr const char* kShimFileName = "libspecd_spm_shim.so";
constexpr size_t kErrorCapacity = 1024;

// SPECD_SPM_SHIM wins; else the nearest one in or above the executable's directory,
// either beside it or in lib/specd there: the build directory's (for build/specd and
// build/tests/*) or an installation's (<prefix>/lib/specd, CMakeLists.txt). No path is
// compiled in, so an installed specd never reaches into a build tree.
fs::path shim_path() {
  if (const char* env = std::getenv("SPECD_SPM_SHIM"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return kShimFileName;  // left to dlmopen's search
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    for (const fs::path& candidate : {dir / kShimFileName, dir / "lib" / "specd" / kShimFileName}) {
      if (fs::exists(candidate, ec)) return candidate;
    }
    if (dir == dir.root_path()) break;
  }
  return exe.parent_path() / kShimFileName;  // missing: the error names where it belongs
}

template <class Fn>
void resolve(void* library, const char* name, Fn& fn, const fs::path& path) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    throw SpecdError(ErrorCode::tokenizer_error, "sentencepiece shim " + path.string() + " lacks symbol " + name);
  }
  fn = reinterpret_cast<Fn>(symbol);
}

SpmApi load_api() {
  const fs::path path = shim_path();
  std::error_code ec;
  if (path.has_parent_path() && !fs::exists(path, ec)) {
    throw SpecdError(ErrorCode::missing_file,
                     "sentencepiece shim library not found: " + path.string() + " (set SPECD_SPM_SHIM to its path)");
  }
  // A namespace of its own keeps libsentencepiece's protobuf 3.14 away from
  // libtorch's 3.21. Not RTLD_DEEPBIND: sanitizer runtimes refuse it.
  void* library = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    const std::string reason = why != nullptr ? why : "unknown error";
    throw SpecdError(ErrorCode::tokenizer_error, "cannot load sentencepiece shim " + path.string() + ": " + reason);
  }
  SpmApi api{};
  try {
    resolve(library, "specd_spm_abi_version", api.abi_version, path);
    if (api.abi_version() != SPECD_SPM_ABI_VERSION) {
      throw SpecdError(ErrorCode::tokenizer_error, "sentencepiece shim " + path.string() + " has ABI version " +
                                                       std::to_string(api.abi_version()) + ", expected " +
                                                       std::to_string(SPECD_SPM_ABI_VERSION));
    }
    resolve(library, "specd_spm_create", api.create, path);
    resolve(library, "specd_spm_create_from_proto", api.create_from_proto, path);
    resolve(library, "specd_spm_destroy", api.destroy, path);
    resolve(library, "specd_spm_encode", api.encode, path);
    resolve(library, "specd_spm_decode", api.decode, path);
    resolve(library, "specd_spm_id_to_piece", api.id_to_piece, path);
    resolve(library, "specd_spm_piece_count", api.piece_count, path);
    resolve(library, "specd_spm_bos_id", api.bos_id, path);
    resolve(library, "specd_spm_eos_id", api.eos_id, path);
    resolve(library, "specd_spm_unk_id", api.unk_id, path);
    resolve(library, "specd_spm_pad_id", api.pad_id, path);
    resolve(library, "specd_spm_is_byte", api.is_byte, path);
    resolve(library, "specd_spm_is_control", api.is_control, path);
    resolve(library, "specd_spm_is_unknown", api.is_unknown, path);
    resolve(library, "specd_spm_train", api.train, path);
  } catch (...) {
    dlclose(library);
    throw;
  }
  // Never closed: handles may live until static destruction.
  return api;
}

// Every call into the shim holds this lock. The shim runs on the C library loaded into
// its dlmopen namespace, whose malloc does not know that the process has other threads
// (the threads were created through the main namespace's libc): concurrent encodes and
// decodes from several threads corrupted its heap (crashes in tests/engine_actors_test
// with a multi-threaded io_context). Serialising is cheap next to a model step.
std::recursive_mutex& shim_mutex() {  // recursive: a failed load destroys its handle under the lock
  static std::recursive_mutex mutex;
  return mutex;
}

// Loaded on first use, once per process. A failure is kept and rethrown, so a
// bad path costs one dlmopen namespace (glibc has 16), not one per caller.
const SpmApi& spm_api() {
  using Loaded = std::variant<SpmApi, SpecdError>;
  static const Loaded loaded = []() -> Loaded {
    try {
      return load_api();
    } catch (const SpecdError& e) {
      return e;
    }
  }();
  if (const auto* error = std::get_if<SpecdError>(&loaded)) throw *error;
  return std::get<SpmApi>(loaded);
}

// Text of a piece as decode would print it: U+2581 is the word-boundary space.
std::string piece_surface(std::string_view piece) {
  constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.substr(i, kSpaceMark.size()) == kSpaceMark) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

// "<0xE2>" -> "\xE2".
std::string byte_piece_value(std::string_view piece) {
  unsigned value = 0;
  const bool framed = piece.size() == 6 && piece.substr(0, 3) == "<0x" && piece.back() == '>';
  if (!framed || std::from_chars(piece.data() + 3, piece.data() + 5, value, 16).ptr != piece.data() + 5) {
    throw SpecdError(ErrorCode::tokenizer_error, "malformed byte piece " + std::string(piece));
  }
  return std::string(1, static_cast<char>(value));
}

std::string raw_piece(const SpmApi& api, const specd_spm* handle, int32_t id) {
  std::string piece(32, '\0');
  int64_t n = api.id_to_piece(handle, id, piece.data(), piece.size());
  if (n > static_cast<int64_t>(piece.size())) {
    piece.resize(static_cast<size_t>(n));
    n = api.id_to_piece(handle, id, piece.data(), piece.size());
  }
  if (n < 0) {
    throw SpecdError(ErrorCode::tokenizer_error, "no piece for id " + std::to_string(id));
  }
  piece.resize(static_cast<size_t>(n));
  return piece;
}

}  // namespace

void SentencePieceTokenizer::HandleDeleter::operator()(specd_spm* handle) const {
  std::lock_guard lock(shim_mutex());
  spm_api().destroy(handle);
}

SentencePieceTokenizer::SentencePieceTokenizer(const fs::path& model_file, SpecialIdOverrides overrides)
    : model_file_(model_file) {
  std::error_code ec;
  if (!fs::is_regular_file(model_file, ec)) {
    throw SpecdError(ErrorCode::missing_file, "sentencepiece model not found: " + model_file.string());
  }
  const SpmApi& api = spm_api();
  std::lock_guard lock(shim_mutex());
  char err[kErrorCapacity] = {};
  handle_.reset(api.create(model_file.c_str(), err, sizeof err));
  if (!handle_) {
    throw SpecdError(ErrorCode::tokenizer_error, "cannot load sentencepiece model " + model_file.string() + ": " + err);
  }
  finish_load(overrides);
}

SentencePieceTokenizer::SentencePieceTokenizer(std::string_view serialized_model, const fs::path& source,
                                               SpecialIdOverrides overrides)
    : model_file_(source) {
  const SpmApi& api = spm_api();
  std::lock_guard lock(shim_mutex());
  char err[kErrorCapacity] = {};
  handle_.reset(api.create_from_proto(serialized_model.data(), serialized_model.size(), err, sizeof err));
  if (!handle_) {
    throw SpecdError(ErrorCode::tokenizer_error,
                     "cannot build a sentencepiece model from " + source.string() + ": " + err);
  }
  finish_load(overrides);
}

void SentencePieceTokenizer::finish_load(const SpecialIdOverrides& overrides) {
  vocab_size_ = spm_api().piece_count(handle_.get());
  load_piece_texts();
  set_special_ids(overrides);
}

void SentencePieceTokenizer::load_piece_texts() {
  const SpmApi& api = spm_api();
  piece_texts_.resize(static_cast<size_t>(vocab_size_));
  is_byte_.resize(static_cast<size_t>(vocab_size_));
  for (int32_t id = 0; id < vocab_size_; ++id) {
    const std::string piece = raw_piece(api, handle_.get(), id);
    std::string& text = piece_texts_[static_cast<size_t>(id)];
    if (api.is_byte(handle_.get(), id) != 0) {
      is_byte_[static_cast<size_t>(id)] = true;
      text = byte_piece_value(piece);
    } else if (api.is_control(handle_.get(), id) != 0) {
      text.clear();  // <s>, </s> print nothing
    } else if (api.is_unknown(handle_.get(), id) != 0) {
      const int32_t one[] = {id};
      text = decode(one);
    } else {
      text = piece_surface(piece);
    }
  }
}

void SentencePieceTokenizer::set_special_ids(const SpecialIdOverrides& overrides) {
  const auto check_special = [&](int32_t id, const char* what, const fs::path& file) {
    if (id < 0 || id >= vocab_size_) {
      throw SpecdError(ErrorCode::bad_value, file.string() + ": " + what + " " + std::to_string(id) +
                                                 " is outside the vocabulary of " + model_file_.string() + " (" +
                                                 std::to_string(vocab_size_) + " pieces)");
    }
  };
  const SpmApi& api = spm_api();
  if (overrides.bos) {
    check_special(*overrides.bos, "bos_token_id", overrides.bos_file);
    bos_id_ = overrides.bos;
  } else if (const int32_t bos = api.bos_id(handle_.get()); bos >= 0) {
    bos_id_ = bos;
  }
  if (overrides.eos) {
    for (const int32_t id : *overrides.eos) check_special(id, "eos_token_id", overrides.eos_file);
    eos_ids_ = *overrides.eos;
  } else if (const int32_t eos = api.eos_id(handle_.get()); eos >= 0) {
    eos_ids_.push_back(eos);
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

void SentencePieceTokenizer::split_added_tokens(std::vector<std::pair<std::string, int32_t>> tokens) {
  for (const auto& [text, id] : tokens) check_id(id);
  std::erase_if(tokens, [](const auto& t) { return t.first.empty(); });
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  added_ = std::move(tokens);
}

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_bos) const {
  if (added_.empty()) return encode_plain(text, add_bos);
  // As HF: added tokens cut out leftmost-longest, each piece between them encoded alone.
  std::vector<int32_t> ids;
  if (add_bos && bos_id_) ids.push_back(*bos_id_);
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    const auto match =
        std::find_if(added_.begin(), added_.end(), [&](const auto& t) { return text.substr(i).starts_with(t.first); });
    if (match == added_.end()) {
      ++i;
      continue;
    }
    if (i > start) {
      const std::vector<int32_t> part = encode_plain(text.substr(start, i - start), false);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    ids.push_back(match->second);
    i += match->first.size();
    start = i;
  }
  if (start < text.size()) {
    const std::vector<int32_t> part = encode_plain(text.substr(start), false);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

std::vector<int32_t> SentencePieceTokenizer::encode_plain(std::string_view text, bool add_bos) const {
  const size_t prefix = add_bos && bos_id_ ? 1 : 0;
  // One id per byte plus the leading word mark is the byte-fallback worst case.
  std::vector<int32_t> ids(prefix + text.size() + 2);
  char err[kErrorCapacity] = {};
  for (;;) {
    const size_t capacity = ids.size() - prefix;
    std::unique_lock lock(shim_mutex());
    const int64_t n =
        spm_api().encode(handle_.get(), text.data(), text.size(), ids.data() + prefix, capacity, err, sizeof err);
    if (n < 0) {
      throw SpecdError(ErrorCode::tokenizer_error,
                       "sentencepiece encode failed (" + model_file_.string() + "): " + err);
    }
    ids.resize(prefix + static_cast<size_t>(n));
    if (static_cast<size_t>(n) <= capacity) break;
  }
  if (prefix == 1) ids[0] = *bos_id_;
  return ids;
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  for (const int32_t id : ids) check_id(id);
  std::string text(ids.size() * 8 + 16, '\0');
  char err[kErrorCapacity] = {};
  for (;;) {
    const size_t capacity = text.size();
    std::unique_lock lock(shim_mutex());
    const int64_t n = spm_api().decode(handle_.get(), ids.data(), ids.size(), text.data(), capacity, err, sizeof err);
    if (n < 0) {
      throw SpecdError(ErrorCode::tokenizer_error,
                       "sentencepiece decode failed (" + model_file_.string() + "): " + err);
    }
    text.resize(static_cast<size_t>(n));
    if (static_cast<size_t>(n) <= capacity) return text;
  }
}

std::string SentencePieceTokenizer::id_to_piece(int32_t id) const {
  check_id(id);
  return piece_texts_[static_cast<size_t>(id)];
}

int32_t SentencePieceTokenizer::vocab_size() const { return vocab_size_; }

std::optional<int32_t> SentencePieceTokenizer::bos_id() const { return bos_id_; }

const std::vector<int32_t>& SentencePieceTokenizer::eos_ids() const { return eos_ids_; }

bool SentencePieceTokenizer::is_byte(int32_t id) const {
  check_id(id);
  return is_byte_[static_cast<size_t>(id)];
}

void SentencePieceTokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= vocab_size_) {
    throw SpecdError(ErrorCode::invalid_argument, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                                      model_file_.string() + " (" + std::to_string(vocab_size_) +
                                                      " pieces)");
  }
}

void train_sentencepiece(const std::string& trainer_args) {
  char err[kErrorCapacity] = {};
  std::unique_lock lock(shim_mutex());
  if (spm_api().train(trainer_args.c_str(), err, sizeof err) != 0) {
    throw SpecdError(ErrorCode::tokenizer_error, "sentencepiece training failed (" + trainer_args + "): " + err);
  }
}

}  // namespace specd
