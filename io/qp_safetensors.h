/* qp_safetensors.h — strict safetensors reader and a small writer.
 *
 * Owns: the safetensors container format. A file is an 8-byte little-endian
 * header length N, N bytes of JSON header
 *     {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]},
 *      "__metadata__": {"key": "value", ...}}
 * (trailing spaces allowed, as writers pad to 8 bytes), then the data buffer;
 * offsets are relative to the data buffer's start and may overlap.
 *
 * Reading converts F32, F16, BF16 and F64 tensors to float32 (qp_tensor_file.h).
 * Other known dtypes (BOOL, U8..U64, I8..I64, F8_E4M3, F8_E5M2, F8_E8M0,
 * F6_E2M3, F6_E3M2, F4, C64) are validated like the rest and then skipped
 * with a note, since real checkpoints carry integer buffers; an unknown dtype
 * string is an error. Every other defect is an error, one line:
 *     LABEL: byte OFF: what is wrong
 * where OFF is the byte offset in the file of the offending header byte
 * (for a tensor entry: of the offending value), e.g.
 *     model.safetensors: byte 87: tensor 'w': data_offsets [0, 400] past end of data (96 bytes)
 * Checked: file shorter than 8 bytes, header length past end of file or over
 * 100 MB, invalid JSON, a non-object header, missing, unknown or mistyped
 * keys, duplicate tensor names, rank above 8, negative, non-integer or
 * too-large dimensions, a shape product that overflows, begin > end, END past
 * the data, END - BEGIN not equal to the shape product times the dtype size,
 * non-string metadata values. The whole header is checked before any data is
 * converted, so a reader never returns part of a broken file. */
#ifndef QP_SAFETENSORS_H
#define QP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "qp_tensor_file.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QP_ST_MAX_HEADER 100000000u /* as the reference implementation */

/* Parse a whole safetensors image from memory; label names it in messages.
 * Tensors and metadata are appended to out; on failure out is unchanged. */
int qp_safetensors_parse(const uint8_t *buf, size_t len, const char *label,
                         const qp_read_opts *opts, qp_tensor_list *out,
                         char *err, size_t errlen);

/* Read a file (memory-mapped) with qp_safetensors_parse. */
int qp_safetensors_read(const char *path, const qp_read_opts *opts, qp_tensor_list *out,
                        char *err, size_t errlen);

/* One tensor to write: data holds nbytes in the dtype's little-endian
 * encoding (e.g. qp_f32_to_bf16_bits output for "BF16"). */
typedef struct {
    const char *name;
    const char *dtype;        /* any dtype the reader knows */
    int ndim;
    const int64_t *shape;
    const void *data;
    size_t nbytes;            /* must match shape and dtype */
} qp_st_tensor;

/* Write n tensors, contiguously in the given order, and metadata (a
 * NULL-terminated list of key, value, key, value, ... strings; may be NULL). */
int qp_safetensors_write(const char *path, const qp_st_tensor *t, size_t n,
                         const char *const *metadata, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
