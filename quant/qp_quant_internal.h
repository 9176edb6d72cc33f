/* qp_quant_internal.h — what the scalar reference (qp_quant_ref.c) and the
 * vector paths (qp_simd_*.c) share inside quant/. Not a public header.
 *
 * A quantization is planned once (tensor scale, rounding) by one driver for
 * every path; the paths differ in their loops only — amax, block amax, the
 * block-scale rule over a row's blocks, and encode/decode of a row — and
 * every vector loop must give the scalar reference's bits. */
#ifndef QP_QUANT_INTERNAL_H
#define QP_QUANT_INTERNAL_H

#include <math.h>
#include <string.h>

#include "qp_format.h"
#include "qp_quant.h"

typedef struct {
    const qp_format_traits *t;
    float scale;      /* per-tensor encode scale (1 when none) */
    float scale_inv;  /* per-tensor decode scale */
    float out_mul;    /* what decoded values are multiplied by last: scale_inv, or 1 (unscaled) */
    bool sr;
    uint64_t seed, stream;
    uint64_t sr_offset, sr_stride; /* global index of row r's first element: sr_offset + r * sr_stride */
    bool nt;          /* a large tensor: outputs may bypass the caches (streaming stores) */
    bool row_amax;    /* encode_row also reports max |x| over finite x (qp_counts.amax); set
                         for the formats without any scale (bf16, fp32), whose statistics
                         need the amax but whose encoding does not */
    bool y_bits;      /* encode_row's y is uint16_t: the BF16 bits of the values (qp_qdq_bf16, whose formats'
                         values are exact in BF16: the minifloats and BF16, never FP32) */
    bool skip_counts; /* qp_qopts.no_counts: an element loop may leave qp_counts' four counts
                         as they are (the driver reports them as 0 either way) */
    bool skip_block_stats; /* qp_qopts.no_counts or no_block_stats: a block loop may leave the
                              block-scale statistics but n_blocks and amax (reported as 0) */
    float amax;       /* the tensor's finite amax, as qp_plan_scale saw it */
    const float *row_scale, *row_scale_inv; /* a row-scaled format (qp_format_traits.row_scaled):
                         row r's encode and decode scales, which replace scale and scale_inv
                         (and out_mul: no per-tensor factor can carry them) for that row */
    const float *row_te_amax; /* row r's amax as TE takes it (NaN or Inf where the row holds them) */
} qp_plan;

/* The plan of a quantization with options o, before its tensor scale
 * (qp_plan_scale): SR row stride o's or, when 0, default_stride (the rows'
 * length as stored). */
static inline qp_plan qp_plan_from_opts(const qp_format_traits *t, const qp_qopts *o, int64_t default_stride,
                                        bool y_bits)
{
    const qp_plan p = {.t = t,
                       .scale = 1.0f,
                       .scale_inv = 1.0f,
                       .out_mul = 1.0f,
                       .sr = o->stochastic,
                       .seed = o->seed,
                       .stream = o->stream,
                       .sr_offset = (uint64_t)o->sr_offset,
                       .sr_stride = (uint64_t)(o->sr_row_stride > 0 ? o->sr_row_stride : default_stride),
                       .y_bits = y_bits,
                       .skip_counts = o->no_counts,
                       .skip_block_stats = o->no_counts || o->no_block_stats};
    return p;
}

/* The plan as qp_core.h's rules take it. */
static inline qp_tplan qp_plan_tensor(const qp_plan *p)
{
    const qp_tplan t = {p->scale, p->scale_inv, p->out_mul, p->sr, p->seed, p->stream, p->sr_offset, p->sr_stride,
                         p->amax};
    return t;
}

/* The block scales of one row (or one band of 2D tiles), as arrays: the
 * stored code (E8M0/UE4M3; the FP32 formats store dec), what elements are
 * multiplied by before the element codec (enc) and what codes are multiplied
 * by after decoding (dec); flag: QP_BLOCK_NAN / QP_BLOCK_ZERO (qp_core.h). */
typedef struct {
    float *enc, *dec;
    uint8_t *code, *flag;
} qp_blockscales;

/* A flag bit the driver adds for the vector encoder: the block (tile) holds
 * NaN or Inf. The reference reads only QP_BLOCK_NAN and QP_BLOCK_ZERO. */
#define QP_BLOCK_NONFINITE 0x80

/* Block-scale statistics. log2 of the scales is summed in fixed point
 * (units of 2^-32) so that every summation order gives the same total. */
typedef struct {
    int64_t n_blocks, n_zero, n_sat, n_live;
    float min, max;  /* over live blocks (non-zero amax, non-zero scale) */
    int64_t log2_fx;
    float amax;      /* largest block amax */
} qp_block_stats;

/* log2 of a positive finite float in units of 2^-32 (the FP32 block scales'
 * statistic), as a fixed sequence of IEEE double operations without libm,
 * which the vector path repeats lane by lane: d = m * 2^e with m in
 * (sqrt(1/2), sqrt(2)], s = (m-1)/(m+1), log2 m = s * sum_i c_i s^(2i) with
 * c_i = 2/((2i+1) ln 2) (|s| < 0.172: the truncation is below 2^-44), the
 * fraction rounded half up. quant/ is compiled with -ffp-contract=off, so
 * p*z + c stays two roundings here as in the vector code. */
#define QP_LOG2_TERMS 8
#define QP_LOG2_SQRT2 1.4142135623730951
#define QP_LOG2_LN2 0.69314718055994531
static const double qp_log2_coef[QP_LOG2_TERMS] = {
    2.0 / (1.0 * QP_LOG2_LN2), 2.0 / (3.0 * QP_LOG2_LN2),  2.0 / (5.0 * QP_LOG2_LN2),  2.0 / (7.0 * QP_LOG2_LN2),
    2.0 / (9.0 * QP_LOG2_LN2), 2.0 / (11.0 * QP_LOG2_LN2), 2.0 / (13.0 * QP_LOG2_LN2), 2.0 / (15.0 * QP_LOG2_LN2)};

static inline int64_t qp_log2_fx_f32(float v)
{
    const double d = (double)v;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    int64_t e = (int64_t)(u >> 52) - 1023;
    u = (u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
    double m;
    memcpy(&m, &u, sizeof m);
    if (m > QP_LOG2_SQRT2) {
        m = m * 0.5;
        e += 1;
    }
    const double s = (m - 1.0) / (m + 1.0), z = s * s;
    double p = qp_log2_coef[QP_LOG2_TERMS - 1];
    for (int i = QP_LOG2_TERMS - 2; i >= 0; i--) {
        p = p * z;
        p = p + qp_log2_coef[i];
    }
    const double l = (s * p) * 4294967296.0;
    return e * 4294967296LL + (int64_t)floor(l + 0.5);
}

/* log2 of every UE4M3 value in units of 2^-32 (filled by qp_tables_init). */
extern int64_t qp_ue4m3_log2_fx[128];
void qp_tables_init(void);
/* log2 of a stored block scale in units of 2^-32 (the statistics' sum). */
int64_t qp_block_scale_log2_fx(qp_block_scale kind, uint8_t code, float dec);

typedef struct {
    int64_t n_nonfinite, n_nonzero, n_sat, n_flushed;
    float amax; /* with qp_plan.row_amax */
} qp_counts;

/* Element loops one path implements. */
typedef struct {
    const char *name;
    /* max |x| over finite values of x[0..n) (0 if none) */
    float (*amax)(const float *x, int64_t n);
    /* per block of bc elements along a row of cols: finite amax and a
     * non-finite flag (the last block may be partial) */
    void (*block_amax)(const float *x, int64_t cols, int bc, float *amax, uint8_t *nonfinite);
    /* per column of x (rows x cols, rows > 0): the largest |x| bits down
     * the column, NaN and Inf included (above every finite value), as the
     * floats colmax[0..cols) (a band of 2D tiles: its block amaxes are
     * block_amax of this one row where no column holds NaN or Inf) */
    void (*col_absmax)(const float *x, int64_t rows, int64_t cols, float *colmax);
    /* the block-scale rule for nb blocks of known amax; adds to st. x: the
     * row the blocks are from (cols elements, blocks of bc), which the Four
     * Over Six rule reads; NULL for a band of 2D tiles */
    void (*block_scales)(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                         const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st);
    /* Encode one row. bs holds one entry per block (bc elements each; NULL for
     * per-tensor formats, which use p->scale). Writes codes (packed, may be
     * NULL: every byte of the row, the padding of a partial last block as
     * zeros) and/or y = decoded values (may be NULL; their BF16 bits when
     * p->y_bits), adds to cnt. gidx0 is the global index of x[0] (stochastic
     * rounding stream position). */
    void (*encode_row)(const qp_plan *p, const float *x, int64_t cols, const qp_blockscales *bs, int bc,
                       uint8_t *codes, float *y, uint64_t gidx0, qp_counts *cnt);
    /* The column layout (qp_qdq_bf16_cols), NULL where the path has none.
     * A band is 16 rows of x, cols a multiple of 16; each of its columns is
     * one 16-element block of the transposed tensor, rotated first by the
     * 16-point Hadamard transform when post (the transform's 16 final
     * multipliers, qp_transpose_rht's) is not NULL, exactly as
     * qp_transpose_rht rotates it. band_amax: the largest |value| bits of
     * the (rotated) band, NaN and Inf included (above 0x7F800000).
     * encode_band, for a band of a format qp_qdq_cols_direct accepts (as
     * many stored rows as the format's block: 16 for NVFP4, QK_MX for MX):
     * the block scales and the values, unscaled as qp_qdq_cols_direct
     * requires (p->out_mul is 1: decode times block scale; their BF16 bits
     * when p->y_bits, else floats) into y in x's layout, adding to cnt and
     * bst; column c's SR
     * words start at gidx0 + c * p->sr_stride. Returns band_amax's value of
     * the band; above 0x7F800000 (NaN or Inf) what it wrote and counted is
     * meaningless (an MX tensor's only check: its scales need no amax
     * first). */
    uint32_t (*band_amax)(const float *x, int64_t cols, const float *post);
    uint32_t (*encode_band)(const qp_plan *p, const float *x, int64_t cols, const float *post, void *y,
                            uint64_t gidx0, qp_counts *cnt, qp_block_stats *bst);
    /* Four Over Six as Transformer Engine computes it: the errors
     * qp_4o6_te_row_error gives eight rows of 16 elements, row j at
     * x + j * stride under candidate scale s[j], decoded with the tensor's
     * amax over denom (mse: squared differences, else absolute), into
     * err[j]; the same float32 operations in the same element order, so
     * the same bits. */
    void (*te_errors8)(const float *x, int64_t stride, const qp_bscale s[8], float amax, float denom, int mse,
                       float err[8]);
} qp_kernels;

extern const qp_kernels qp_kernels_ref;
/* NULL when the CPU or compiler lacks AVX-512 (or QP_SIMD names another path). */
const qp_kernels *qp_kernels_avx512(void);
/* NULL when the CPU or compiler lacks AVX2 (or QP_SIMD names another path). */
const qp_kernels *qp_kernels_avx2(void);
/* The AVX2 te_errors8, which the AVX-512 path shares (eight lanes suffice:
 * a 16x16 tile's rows or eight blocks at a time). */
void qp_te_errors8_avx2(const float *x, int64_t stride, const qp_bscale s[8], float amax, float denom, int mse,
                        float err[8]);

/* The path in use: AVX-512 where the CPU has it, else AVX2, else the scalar
 * reference; QP_SIMD=scalar, avx2 or avx512 names one. */
const qp_kernels *qp_active_kernels(void);

/* How far ahead of a streaming loop the vector paths ask for its input
 * (floats): 4 KiB, two pages' worth of cache lines in flight beyond what the
 * hardware prefetchers (which stop at page boundaries and run only a few
 * lines ahead) ask for. A tensor read from memory (bench_quant's 64 MiB: the
 * second pass of a two-pass format rereads what the first evicted) is then
 * read at the memory's pace while the loop computes: single-threaded
 * bench_quant, alternating with and without, NVFP4 34 -> 41-42% and FP8
 * with a tensor scale 48 -> 68% of memcpy's bytes/s on AVX-512 (512 and
 * 2048 gave less). A tensor already in the caches pays one prefetch per
 * line. */
#define QP_READ_AHEAD 1024

/* Ask for the n_ahead floats (a multiple of 16: whole lines) QP_READ_AHEAD
 * after x[i] when they lie before x[n] (a prefetch past the array would
 * compute a pointer out of its bounds). */
static inline void qp_read_ahead(const float *x, int64_t i, int64_t n, int n_ahead)
{
    if (i + QP_READ_AHEAD + n_ahead > n) return;
    for (int l = 0; l < n_ahead; l += 16) __builtin_prefetch(x + i + QP_READ_AHEAD + l, 0, 3);
}

/* Per-thread scratch that only grows (slot < QP_SCRATCH_SLOTS): NULL when
 * out of memory. The quantize driver uses slots 0-2 and 5 (a row-scaled
 * format's row scales), qp_quant_cols.c 0 and 3-4. */
#define QP_SCRATCH_SLOTS 6
void *qp_scratch(int slot, size_t bytes);

/* What one chunk of rows (or one band) of a quantization counted. */
typedef struct {
    qp_counts cnt;
    qp_block_stats bst;
    float pass1_amax; /* two-pass formats: the largest block amax of the chunk; per-tensor formats:
                       * the amax of a thread's chunks, in its first one */
} qp_chunk_result;

/* The tensor scale of p from the tensor's finite amax (or the caller's
 * o->scale), and out_mul: how every driver sets them. */
void qp_plan_scale(qp_plan *p, const qp_qopts *o, float amax);
/* The tensor's statistics from its chunks' results (amax: the tensor amax
 * of a per-tensor or two-pass format, else 0). */
void qp_finish_stats(const qp_plan *p, const qp_chunk_result *res, int64_t nchunks, int64_t n, float amax,
                     qp_qstats *st);

/* The scalar block-scale rule and statistics (the reference's block_scales,
 * and the vector path's explicit fallback for the rules it does not
 * vectorize: qp_simd_avx512.c). */
void qp_block_scales_ref(const qp_plan *p, const float *x, int64_t cols, int bc, const float *amax,
                         const uint8_t *nonfinite, int64_t nb, qp_blockscales *bs, qp_block_stats *st);

#endif
