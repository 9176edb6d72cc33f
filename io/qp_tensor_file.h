/* qp_tensor_file.h — the in-memory tensor list every reader fills.
 *
 * Owns: qp_tensor (name, dtype of origin, shape, float32 data), the list that
 * holds them, the read options shared by all readers (name filter, notes), the
 * exact 16-bit float decoders, and the checked shape arithmetic.
 *
 * A tensor is seen as a rows x cols matrix: cols is the last dimension, rows
 * the product of the others; a 0-d or 1-d tensor is 1 x n. Data is always
 * float32: F16 and BF16 widen exactly (every value, subnormals, Inf and NaN
 * payloads keep their bits), F32 is copied, F64 is rounded to nearest.
 *
 * Error convention of every io/ function: return 0 on success, -1 on failure
 * with a one-line message (no trailing newline) in err[errlen]. */
#ifndef QP_TENSOR_FILE_H
#define QP_TENSOR_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QP_TENSOR_MAX_DIMS 8
#define QP_ERR_LEN 512 /* a comfortable size for err buffers */

typedef enum {
    QP_DTYPE_F32 = 0,
    QP_DTYPE_F16,
    QP_DTYPE_BF16,
    QP_DTYPE_F64,
    QP_DTYPE_FLOAT_OTHER /* an HDF5 float of another layout, converted by HDF5 */
} qp_dtype;

const char *qp_dtype_name(qp_dtype d);

typedef struct {
    char *name;
    qp_dtype dtype;                       /* as stored in the file */
    int ndim;
    int64_t shape[QP_TENSOR_MAX_DIMS];
    int64_t numel;
    int64_t rows, cols;
    float *data;                          /* numel floats; NULL when numel == 0 */
} qp_tensor;

typedef struct {
    char *key, *value;
} qp_meta_kv;

typedef struct {
    qp_tensor *t;
    size_t n, cap;
    qp_meta_kv *meta;                     /* file metadata (safetensors __metadata__) */
    size_t n_meta, cap_meta;
} qp_tensor_list;

/* Options every reader takes; NULL means: keep every tensor, say nothing. */
typedef struct {
    /* Return non-zero to load the tensor called name. Tensors it rejects are
     * still validated (a broken file is broken) but never converted, so a
     * filter keeps a large checkpoint's memory down. */
    int (*want)(const char *name, void *user);
    /* Non-fatal remarks, e.g. a skipped integer tensor; one line, no newline. */
    void (*note)(const char *msg, void *user);
    void *user;
} qp_read_opts;

void qp_tensor_list_init(qp_tensor_list *l);
void qp_tensor_list_free(qp_tensor_list *l);

/* Append a tensor; takes ownership of data (malloc'ed, numel floats, or NULL
 * if numel == 0) even on failure. name is copied. Fails on a rank above
 * QP_TENSOR_MAX_DIMS, a negative dimension, a shape product that overflows,
 * or no memory. */
int qp_tensor_list_add(qp_tensor_list *l, const char *name, qp_dtype dtype, int ndim,
                       const int64_t *shape, float *data, char *err, size_t errlen);
int qp_tensor_list_add_meta(qp_tensor_list *l, const char *key, const char *value,
                            char *err, size_t errlen);

/* Product of ndim non-negative dimensions into *numel; -1 if it exceeds
 * INT64_MAX (a zero dimension makes the product 0 whatever the others). */
int qp_shape_numel(int ndim, const int64_t *shape, int64_t *numel);
/* rows x cols view of a shape (see above); shape must have passed qp_shape_numel. */
void qp_shape_rows_cols(int ndim, const int64_t *shape, int64_t *rows, int64_t *cols);

/* Exact widening of IEEE binary16 and bfloat16 bit patterns. */
float qp_f16_bits_to_f32(uint16_t h);
float qp_bf16_bits_to_f32(uint16_t b);
/* Narrowing, round to nearest even (overflow gives Inf, NaN stays NaN). */
uint16_t qp_f32_to_f16_bits(float x);
uint16_t qp_f32_to_bf16_bits(float x);

/* Convert n little-endian elements of dtype (F32, F16, BF16 or F64) at src to
 * float32; src needs no alignment. */
void qp_convert_to_f32(qp_dtype dtype, const uint8_t *src, int64_t n, float *dst);

/* Call opts->note with a printf-formatted line, if there is a note callback. */
void qp_read_note(const qp_read_opts *opts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Copy s into out (NUL-terminated, at most outlen bytes) with control
 * characters, quotes and backslashes escaped, so a hostile tensor name cannot
 * break a one-line message. Returns out. */
const char *qp_escape_name(const char *s, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
