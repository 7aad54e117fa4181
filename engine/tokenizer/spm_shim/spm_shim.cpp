// The C API of spm_shim.h over sentencepiece::SentencePieceProcessor. Every entry
// point catches everything: an exception must never cross into the loader's
// namespace, whose C++ runtime is a different copy from this one.
#include "engine/tokenizer/spm_shim/spm_shim.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

struct specd_spm {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

void write_error(char* err, size_t err_cap, std::string_view message) {
  if (err == nullptr || err_cap == 0) return;
  const size_t n = std::min(message.size(), err_cap - 1);
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

// The size protocol shared by decode and id_to_piece: report the full size, copy
// only when it fits.
int64_t copy_out(std::string_view text, char* out, size_t out_cap) {
  if (text.size() <= out_cap && !text.empty()) std::memcpy(out, text.data(), text.size());
  return static_cast<int64_t>(text.size());
}

bool valid_id(const specd_spm* spm, int32_t id) { return id >= 0 && id < spm->processor.GetPieceSize(); }

template <class LoadFn>
specd_spm* create_with(LoadFn load, char* err, size_t err_cap) {
  try {
    auto* spm = new specd_spm;
    const auto status = load(spm->processor);
    if (!status.ok()) {
      write_error(err, err_cap, status.ToString());
      delete spm;
      return nullptr;
    }
    return spm;
  } catch (const std::exception& e) {
    write_error(err, err_cap, e.what());
  } catch (...) {
    write_error(err, err_cap, "unknown exception while loading the model");
  }
  return nullptr;
}

}  // namespace

extern "C" {

int32_t specd_spm_abi_version(void) { return SPECD_SPM_ABI_VERSION; }

specd_spm* specd_spm_create(const char* model_path, char* err, size_t err_cap) {
  return create_with([&](sentencepiece::SentencePieceProcessor& p) { return p.Load(model_path); }, err, err_cap);
}

specd_spm* specd_spm_create_from_proto(const char* bytes, size_t len, char* err, size_t err_cap) {
  return create_with(
      [&](sentencepiece::SentencePieceProcessor& p) { return p.LoadFromSerializedProto(std::string_view(bytes, len)); },
      err, err_cap);
}

void specd_spm_destroy(specd_spm* spm) { delete spm; }

int64_t specd_spm_encode(const specd_spm* spm, const char* text, size_t text_len, int32_t* ids, size_t ids_cap,
                         char* err, size_t err_cap) {
  try {
    std::vector<int> out;
    const auto status = spm->processor.Encode(std::string_view(text, text_len), &out);
    if (!status.ok()) {
      write_error(err, err_cap, status.ToString());
      return -1;
    }
    if (out.size() <= ids_cap) std::copy(out.begin(), out.end(), ids);
    return static_cast<int64_t>(out.size());
  } catch (const std::exception& e) {
    write_error(err, err_cap, e.what());
  } catch (...) {
    write_error(err, err_cap, "unknown exception while encoding");
  }
  return -1;
}

int64_t specd_spm_decode(const specd_spm* spm, const int32_t* ids, size_t n_ids, char* out, size_t out_cap, char* err,
                         size_t err_cap) {
  try {
    std::vector<int> in(ids, ids + n_ids);
    // SentencePiece's own range check CHECKs in some versions; do it here.
    for (const int id : in) {
      if (!valid_id(spm, id)) {
        write_error(
            err, err_cap,
            "id " + std::to_string(id) + " is out of range [0, " + std::to_string(spm->processor.GetPieceSize()) + ")");
        return -1;
      }
    }
    std::string text;
    const auto status = spm->processor.Decode(in, &text);
    if (!status.ok()) {
      write_error(err, err_cap, status.ToString());
      return -1;
    }
    return copy_out(text, out, out_cap);
  } catch (const std::exception& e) {
    write_error(err, err_cap, e.what());
  } catch (...) {
    write_error(err, err_cap, "unknown exception while decoding");
  }
  return -1;
}

int64_t specd_spm_id_to_piece(const specd_spm* spm, int32_t id, char* out, size_t out_cap) {
  if (!valid_id(spm, id)) return -1;
  try {
    return copy_out(spm->processor.IdToPiece(id), out, out_cap);
  } catch (...) {
    return -1;
  }
}

int32_t specd_spm_piece_count(const specd_spm* spm) { return spm->processor.GetPieceSize(); }
int32_t specd_spm_bos_id(const specd_spm* spm) { return spm->processor.bos_id(); }
int32_t specd_spm_eos_id(const specd_spm* spm) { return spm->processor.eos_id(); }
int32_t specd_spm_unk_id(const specd_spm* spm) { return spm->processor.unk_id(); }
int32_t specd_spm_pad_id(const specd_spm* spm) { return spm->processor.pad_id(); }

int32_t specd_spm_is_byte(const specd_spm* spm, int32_t id) {
  return valid_id(spm, id) && spm->processor.IsByte(id) ? 1 : 0;
}

int32_t specd_spm_is_control(const specd_spm* spm, int32_t id) {
  return valid_id(spm, id) && spm->processor.IsControl(id) ? 1 : 0;
}

int32_t specd_spm_is_unknown(const specd_spm* spm, int32_t id) {
  return valid_id(spm, id) && spm->processor.IsUnknown(id) ? 1 : 0;
}

int32_t specd_spm_train(const char* trainer_args, char* err, size_t err_cap) {
  try {
    const auto status = sentencepiece::SentencePieceTrainer::Train(std::string_view(trainer_args));
    if (!status.ok()) {
      write_error(err, err_cap, status.ToString());
      return -1;
    }
    return 0;
  } catch (const std::exception& e) {
    write_error(err, err_cap, e.what());
  } catch (...) {
    write_error(err, err_cap, "unknown exception while training");
  }
  return -1;
}

}  // extern "C"
