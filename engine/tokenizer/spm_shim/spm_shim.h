#pragma once
/* Plain C API over Debian's libsentencepiece, built as libspecd_spm_shim.so.
 *
 * Why a shim: libsentencepiece.so.0 carries and exports its own protobuf 3.14, while
 * libtorch loads protobuf 3.21; in one link map they crash. specd loads this library
 * with dlmopen(LM_ID_NEWLM) into a namespace of its own (engine/tokenizer/sentencepiece_tokenizer.cpp),
 * so only C types cross the boundary: no exceptions, no C++ objects, and nothing is
 * allocated on one side and freed on the other. Output goes into caller buffers; calls
 * that fill a buffer return the size they need, so the caller retries with a bigger one.
 *
 * A handle is immutable after create; every function taking a const handle may be
 * called from several threads at once.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPECD_SPM_EXPORT __attribute__((visibility("default")))

/* Bumped whenever a signature below changes; the loader refuses a mismatch. */
#define SPECD_SPM_ABI_VERSION 2

typedef struct specd_spm specd_spm;

SPECD_SPM_EXPORT int32_t specd_spm_abi_version(void);

/* Loads a SentencePiece .model file. Returns NULL on failure with a message in err
 * (truncated to err_cap, always NUL-terminated when err_cap > 0). */
SPECD_SPM_EXPORT specd_spm* specd_spm_create(const char* model_path, char* err, size_t err_cap);
/* The same from a serialized ModelProto (the bytes of a .model file, or one built in
 * memory, e.g. from a GGUF file's vocabulary). */
SPECD_SPM_EXPORT specd_spm* specd_spm_create_from_proto(const char* bytes, size_t len, char* err, size_t err_cap);
SPECD_SPM_EXPORT void specd_spm_destroy(specd_spm* spm);

/* Encodes text[0..text_len) without BOS/EOS. Returns the number of ids; they are
 * written only when that number is <= ids_cap. Returns -1 on failure (message in err). */
SPECD_SPM_EXPORT int64_t specd_spm_encode(const specd_spm* spm, const char* text, size_t text_len, int32_t* ids,
                                          size_t ids_cap, char* err, size_t err_cap);

/* Decodes ids into UTF-8 text. Returns the byte length of the text (no NUL is
 * written or counted); the text is written only when it fits in out_cap.
 * Returns -1 on failure, e.g. an id out of range (message in err). */
SPECD_SPM_EXPORT int64_t specd_spm_decode(const specd_spm* spm, const int32_t* ids, size_t n_ids, char* out,
                                          size_t out_cap, char* err, size_t err_cap);

/* The raw piece of id as stored in the model (e.g. "\xE2\x96\x81Hello", "<0x0A>", "<s>").
 * Same size protocol as decode; -1 when id is out of range. */
SPECD_SPM_EXPORT int64_t specd_spm_id_to_piece(const specd_spm* spm, int32_t id, char* out, size_t out_cap);

SPECD_SPM_EXPORT int32_t specd_spm_piece_count(const specd_spm* spm);
/* Special ids; -1 when the model has none. */
SPECD_SPM_EXPORT int32_t specd_spm_bos_id(const specd_spm* spm);
SPECD_SPM_EXPORT int32_t specd_spm_eos_id(const specd_spm* spm);
SPECD_SPM_EXPORT int32_t specd_spm_unk_id(const specd_spm* spm);
SPECD_SPM_EXPORT int32_t specd_spm_pad_id(const specd_spm* spm);
/* Piece kinds, 1 or 0 (0 also for ids out of range): a byte-fallback piece (<0xNN>),
 * a control piece (<s>, </s>), the unknown piece. */
SPECD_SPM_EXPORT int32_t specd_spm_is_byte(const specd_spm* spm, int32_t id);
SPECD_SPM_EXPORT int32_t specd_spm_is_control(const specd_spm* spm, int32_t id);
SPECD_SPM_EXPORT int32_t specd_spm_is_unknown(const specd_spm* spm, int32_t id);

/* Runs the SentencePiece trainer with a command-line style argument string, e.g.
 * "--input=a.txt --model_prefix=m --vocab_size=300 --model_type=bpe --byte_fallback=true".
 * Returns 0 on success, -1 on failure (message in err). */
SPECD_SPM_EXPORT int32_t specd_spm_train(const char* trainer_args, char* err, size_t err_cap);

#ifdef __cplusplus
} /* extern "C" */
#endif
