/* qp_tensor_file.c — the tensor list, 16-bit float codecs, shape arithmetic
 * (see qp_tensor_file.h). */
#include "qp_tensor_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *qp_dtype_name(qp_dtype d)
{
    switch (d) {
    case QP_DTYPE_F32: return "F32";
    case QP_DTYPE_F16: return "F16";
    case QP_DTYPE_BF16: return "BF16";
    case QP_DTYPE_F64: return "F64";
    case QP_DTYPE_FLOAT_OTHER: return "FLOAT";
    }
    return "?";
}

void qp_tensor_list_init(qp_tensor_list *l)
{
    memset(l, 0, sizeof *l);
}

void qp_tensor_list_free(qp_tensor_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->t[i].name);
        free(l->t[i].data);
    }
    for (size_t i = 0; i < l->n_meta; i++) {
        free(l->meta[i].key);
        free(l->meta[i].value);
    }
    free(l->t);
    free(l->meta);
    memset(l, 0, sizeof *l);
}

int qp_shape_numel(int ndim, const int64_t *shape, int64_t *numel)
{
    int64_t p = 1;
    int overflow = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] == 0) {
            *numel = 0;
            return 0;
        }
        /* Keep scanning after an overflow: a later zero still makes it empty. */
        if (!overflow && __builtin_mul_overflow(p, shape[i], &p)) overflow = 1;
    }
    if (overflow) return -1;
    *numel = p;
    return 0;
}

void qp_shape_rows_cols(int ndim, const int64_t *shape, int64_t *rows, int64_t *cols)
{
    if (ndim == 0) {
        *rows = 1;
        *cols = 1;
        return;
    }
    *cols = shape[ndim - 1];
    /* An empty tensor's other dimensions are unchecked (their product may
     * overflow): it has 0 rows. */
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) {
            *rows = 0;
            return;
        }
    int64_t r = 1;
    for (int i = 0; i < ndim - 1; i++) r *= shape[i];
    *rows = r;
}

int qp_tensor_list_add(qp_tensor_list *l, const char *name, qp_dtype dtype, int ndim,
                       const int64_t *shape, float *data, char *err, size_t errlen)
{
    char esc[256];
    if (ndim < 0 || ndim > QP_TENSOR_MAX_DIMS) {
        snprintf(err, errlen, "tensor '%s': rank %d exceeds %d",
                 qp_escape_name(name, esc, sizeof esc), ndim, QP_TENSOR_MAX_DIMS);
        free(data);
        return -1;
    }
    int64_t numel;
    if (qp_shape_numel(ndim, shape, &numel) != 0) {
        snprintf(err, errlen, "tensor '%s': shape is negative or its product overflows",
                 qp_escape_name(name, esc, sizeof esc));
        free(data);
        return -1;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        qp_tensor *t = realloc(l->t, cap * sizeof *t);
        if (!t) goto oom;
        l->t = t;
        l->cap = cap;
    }
    qp_tensor *t = &l->t[l->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) goto oom;
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->numel = numel;
    qp_shape_rows_cols(ndim, shape, &t->rows, &t->cols);
    t->data = data;
    l->n++;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    free(data);
    return -1;
}

int qp_tensor_list_add_meta(qp_tensor_list *l, const char *key, const char *value,
                            char *err, size_t errlen)
{
    if (l->n_meta == l->cap_meta) {
        size_t cap = l->cap_meta ? 2 * l->cap_meta : 8;
        qp_meta_kv *m = realloc(l->meta, cap * sizeof *m);
        if (!m) goto oom;
        l->meta = m;
        l->cap_meta = cap;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        goto oom;
    }
    l->meta[l->n_meta].key = k;
    l->meta[l->n_meta].value = v;
    l->n_meta++;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static inline float bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float qp_f16_bits_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) /* Inf/NaN: the payload moves up unchanged, as numpy does */
        return bits_to_f32(sign | 0x7F800000u | (man << 13));
    if (exp != 0)
        return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0)
        return bits_to_f32(sign);
    /* Subnormal half = man * 2^-24, normal in float32: shift the leading one
     * up to the implicit-bit position, lowering the exponent as we go. */
    uint32_t e = 113;
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    return bits_to_f32(sign | (e << 23) | ((man & 0x3FFu) << 13));
}

float qp_bf16_bits_to_f32(uint16_t b)
{
    return bits_to_f32((uint32_t)b << 16);
}

uint16_t qp_f32_to_f16_bits(float x)
{
    const uint32_t b = f32_to_bits(x), a = b & 0x7FFFFFFFu;
    const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    if (a > 0x7F800000u) /* NaN: keep it a (quiet) NaN even if the top payload bits are 0 */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a >= 0x477FF000u) /* >= 65520 rounds (ties-to-even) past 65504 */
        return (uint16_t)(sign | 0x7C00u);
    if (a >= 0x38800000u) { /* normal half */
        const uint32_t r = a + 0xFFFu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((r >> 13) - (112u << 10)));
    }
    /* Subnormal half: adding 0.5 leaves an ulp of 2^-24, the subnormal step,
     * so the FPU's round-to-nearest-even does the rounding. */
    const float t = bits_to_f32(a) + 0.5f;
    return (uint16_t)(sign | (f32_to_bits(t) - 0x3F000000u));
}

uint16_t qp_f32_to_bf16_bits(float x)
{
    const uint32_t b = f32_to_bits(x);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((b >> 16) | 0x40u);
    return (uint16_t)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

void qp_convert_to_f32(qp_dtype dtype, const uint8_t *src, int64_t n, float *dst)
{
    switch (dtype) {
    case QP_DTYPE_F32:
        for (int64_t i = 0; i < n; i++, src += 4)
            dst[i] = bits_to_f32((uint32_t)src[0] | (uint32_t)src[1] << 8 |
                                 (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24);
        break;
    case QP_DTYPE_F16:
        for (int64_t i = 0; i < n; i++, src += 2)
            dst[i] = qp_f16_bits_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case QP_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++, src += 2)
            dst[i] = qp_bf16_bits_to_f32((uint16_t)(src[0] | src[1] << 8));
        break;
    case QP_DTYPE_F64:
        for (int64_t i = 0; i < n; i++, src += 8) {
            uint64_t u = 0;
            for (int k = 7; k >= 0; k--) u = u << 8 | src[k];
            double d;
            memcpy(&d, &u, sizeof d);
            dst[i] = (float)d;
        }
        break;
    case QP_DTYPE_FLOAT_OTHER:
        /* Only HDF5 produces these, and HDF5 converts them itself. */
        abort();
    }
}

void qp_read_note(const qp_read_opts *opts, const char *fmt, ...)
{
    if (!opts || !opts->note) return;
    char buf[QP_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    opts->note(buf, opts->user);
}

const char *qp_escape_name(const char *s, char *out, size_t outlen)
{
    size_t o = 0;
    if (outlen == 0) return out;
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        char tmp[8];
        size_t k;
        if (c < 0x20 || c == 0x7F) k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
        else if (c == '\'' || c == '\\') k = (size_t)snprintf(tmp, sizeof tmp, "\\%c", c);
        else {
            tmp[0] = (char)c;
            k = 1;
        }
        if (o + k + 4 >= outlen) { /* room for "..." and NUL */
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, tmp, k);
        o += k;
    }
    out[o] = '\0';
    return out;
}
