/* qp_quant_internal.h — what the scalar reference (qp_quant_ref.c) and the
 * vector paths (qp_simd_*.c) share inside quant/. Not a public header.
 *
 * A quantization is planned once (tensor scale, rounding), block scales are
 * chosen by one scalar rule for every path (qp_block_scale_rule), and only the
 * element loops — block amax and encode/decode of a row — differ by path. */
#ifndef QP_QUANT_INTERNAL_H
#define QP_QUANT_INTERNAL_H

#include "qp_format.h"
#include "qp_quant.h"

typedef struct {
    const qp_format_traits *t;
    float scale;      /* per-tensor encode scale (1 when none) */
    float scale_inv;  /* per-tensor decode scale */
    bool sr;
    uint64_t seed, stream;
} qp_plan;

/* A block's scale: stored code, what elements are multiplied by before the
 * element codec (enc) and what codes are multiplied by after decoding (dec). */
typedef struct {
    float enc, dec;
    uint8_t code;
    uint8_t nan;   /* MX block holding NaN/Inf: every element decodes NaN */
    uint8_t zero;  /* NVFP4 block whose scale is 0: every element stores 0 */
} qp_blockscale;

typedef struct {
    int64_t n_nonfinite, n_nonzero, n_sat, n_flushed;
} qp_counts;

/* Element loops one path implements. */
typedef struct {
    const char *name;
    /* max |x| over finite values of x[0..n) (0 if none) */
    float (*amax)(const float *x, int64_t n);
    /* per block of bc elements along a row of cols: finite amax and a
     * non-finite flag (the last block may be partial) */
    void (*block_amax)(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite);
    /* Encode one row. bs holds one entry per block (bc elements each; NULL for
     * per-tensor formats, which use p->scale). Writes codes (packed, may be
     * NULL) and/or y = decoded values (may be NULL), adds to cnt. gidx0 is the
     * global index of x[0] (stochastic rounding stream position). */
    void (*encode_row)(const qp_plan *p, const float *x, int64_t cols, const qp_blockscale *bs, int bc,
                       uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt);
} qp_kernels;

extern const qp_kernels qp_kernels_ref;
/* NULL when the CPU or compiler lacks AVX-512. */
const qp_kernels *qp_kernels_avx512(void);

void qp_block_scale_rule(const qp_plan *p, float amax_b, int nonfinite, qp_blockscale *bs);

/* Scalar element encode/decode shared by the reference loops and the vector
 * paths' tails. */
uint32_t qp_encode_elem(qp_elem e, float v, int sr, uint32_t r);
float qp_decode_elem(qp_elem e, uint32_t code);

#endif
