/* qp_quant.h — tensor quantizers: per-tensor FP8, OCP MX (MXFP8, MXFP6,
 * MXFP4, with the OCP or the round-up scale rule), NVFP4 (1x16, 16x16, Four
 * Over Six) and FP8 block scaling (1x128, 128x128; FP32 or power-of-two
 * scales), packed storage and dequantization, and a fused
 * quantize-dequantize for emulation.
 *
 * Owns: the quantization driver, the packed layout of every tensor format and
 * qp_formats[], the table that names them. The rows themselves and every
 * rule are qp_core.h's (host/device C the CUDA kernels compile too); adding a
 * format is docs/formats.md's "Adding a format".
 *
 * Layout. A tensor is a row-major rows x cols float32 matrix; blocks run along
 * the contiguous (last) dimension. A row is padded with zeros to a whole number
 * of blocks: the padding is never read from the input, contributes nothing to
 * any amax, and is stored as code 0. Codes: one byte per element for FP8 and
 * FP6 (FP6 in the low six bits), two (little-endian) for BF16, four for FP32,
 * two elements per byte for FP4 (even element in the low nibble, as cuda_fp4's
 * __nv_fp4x2 stores them). Block scales: scale_rows x scale_cols, row-major,
 * in the plain (not swizzled) order, scale_bytes each (one byte for E8M0 and
 * UE4M3, the four little-endian bytes of the FP32 decode scale for FP8
 * blocks); 2D formats keep one scale per tile.
 *
 * Scale rules (x is the input, Q the element quantizer, "dec" what a reader
 * multiplies codes by; the exact float order is qp_core.h's qp_block_scale):
 *   bf16      y = bf16(x)
 *   fp8-e4m3  s = 448/amax (per tensor; amax over finite values; s = 1 if
 *   fp8-e5m2  amax == 0; clamped to FLT_MAX), y = Q(x*s), dec = 1/s.  A caller
 *             may pass its own s (delayed scaling, qp_scaling.h).
 *   mxfp8     per 32-block: X = 2^(floor(log2 amax_b) - emax), emax = 8 (E4M3),
 *   mxfp8-e5m2  15 (E5M2), 2 (E2M1, E2M3), 4 (E3M2), clamped to
 *   mxfp6-*   [2^-127, 2^127], stored as E8M0; y = Q(x / X) (elements
 *   mxfp4     saturate), dec = X. A block holding NaN or Inf gets the NaN
 *             scale 0xFF (all its elements decode NaN), as the OCP reference
 *             code does; an all-zero block gets 2^-127.
 *   mxfp8-rceil, mxfp4-rceil  X = 2^ceil(log2(fl(amax_b * fl(1/elem_max)))),
 *             Transformer Engine's and cuBLAS's rule: the block amax never
 *             saturates. Otherwise as MX.
 *   nvfp4     S = 6*448/amax (tensor, FP32; 1 if amax == 0), per 16-block
 *   nvfp4-2d  d_b = ue4m3(amax_b * (S * (1/6))), e_b = 1/(d_b * (1/S)),
 *             y = e2m1(x * e_b), dec = e2m1 * d_b * (1/S). A block whose d_b
 *             is 0 stores zeros. NaN inputs encode as +6 (the E2M1 oracle);
 *             amax and S ignore non-finite values. The float operations run
 *             in exactly this order, Transformer Engine's (at an E4M3 tie,
 *             amax_b*S/6 and amax_b*(S*(1/6)) can round to different scales).
 *   nvfp4-4o6 S = 6*256/amax; per 16-block the NVFP4 scale d6 of t =
 *             amax_b*(S*(1/6)) and d4 of t*1.5 (the block scaled to 4); the
 *             one whose decoded block has the smaller squared error wins
 *             (ties: 6).
 *   nvfp4-row as nvfp4 with S per row (Transformer Engine's row_scaled_nvfp4):
 *             S_r = 6*448/amax_r by TE's arithmetic (qp_te_tensor_scale: FLT_MAX
 *             for a zero row), amax_r taking NaN and Inf in as TE's does: a
 *             row holding NaN gets NaN scales (0x7F) and codes 0, a row
 *             holding Inf S_r = 1 and its Inf blocks the scale 448. The row
 *             scales are stored in qp_qtensor.row_scale_inv; qp_qstats'
 *             scale and scale_inv are 1, and unscaled output (qp_qopts)
 *             keeps each row's scale (no per-tensor factor can carry it).
 *   nvfp4-4o6-te, -te-mse, -te-2d, -te-mse-2d  Four Over Six as Transformer
 *             Engine's reference computes it (qp_core.h): float32 MAE or MSE
 *             decoded with amax/1536, 16x16 tiles summing their rows in TE's
 *             tree order, TE's element bytes, and TE's NaN/Inf tensor amax.
 *   fp8-block, fp8-block-2d  per 1x128 tile / 128x128 block: s_b = 448/amax_b
 *             (1 if 0, FLT_MAX on overflow), y = Q(x * s_b), dec = 1/s_b stored
 *             as FP32; -pow2: s_b keeps its exponent bits only (rounded down
 *             to a power of two). Non-finite inputs do not count in amax_b.
 * NaN/Inf: per-tensor amax ignores non-finite values; they are counted in
 * qp_qstats.n_nonfinite and encoded as the element codec does (see qp_format.h).
 */
#ifndef QP_QUANT_H
#define QP_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qp_core.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const qp_format_traits qp_formats[QP_FMT_COUNT];

/* Traits by CLI name; NULL if unknown. */
const qp_format_traits *qp_format_by_name(const char *name);
/* Comma-separated list of every format name (for error messages). */
const char *qp_format_names(void);

/* Options of one quantization. Zero-initialised means: round to nearest,
 * current scaling. */
typedef struct {
    bool stochastic;   /* stochastic rounding of elements */
    uint64_t seed;     /* SR: generator key */
    uint64_t stream;   /* SR: stream (e.g. tensor id x step), element i has SR index i */
    int64_t sr_offset;     /* SR: element (r, c) has SR index sr_offset + r * sr_row_stride + c */
    int64_t sr_row_stride; /*   (qp_sr_word of it), stride 0 meaning cols (zeroes: index i for   */
                           /*   element i): a slice of a bigger tensor draws the bits the whole  */
                           /*   tensor's quantization draws for the same elements (data-parallel ranks) */
    float scale;       /* > 0: use this per-tensor encode scale instead of the current one
                          (fp8: s; nvfp4: S); ignored by formats without a tensor scale
                          and by the row-scaled ones */
    float amax;        /* with scale: the tensor amax it came from, which the -te Four Over
                          Six rules decode their errors with (0: tensor_range / scale); a
                          slice of a tensor passes the whole tensor's scale and amax */
    bool unscaled;     /* qp_qdq only: output decode(code) * block scale, leaving the
                          per-tensor decode scale (qp_qstats.scale_inv) to the caller.
                          These values are exact in BF16 for every format whose row
                          says unscaled_exact (MX and power-of-two blocks: unless the
                          block scale is below 2^-124), which is what lets a BF16
                          GEMM with the tensor scales in alpha emulate the hardware;
                          the FP32-scaled FP8 blocks are not (qp_decode_codes). */
    bool no_counts;    /* the caller reads no counts: n_nonfinite, n_nonzero, n_sat,
                          n_flushed and the block-scale statistics (n_blocks_zero_scale,
                          n_blocks_sat_scale, block_scale_min/max/log2_mean) come back 0
                          (the paths skip that work in their element and block loops);
                          n, amax, the scales and n_blocks are reported as always */
    bool no_block_stats; /* the caller reads no block-scale statistics (the trainer's
                          scaling updates read the counts only): those no_counts leaves
                          out come back 0, the counts as always */
} qp_qopts;

/* What one quantization saw. Counts are over real (unpadded) elements. */
typedef struct {
    int64_t n;             /* elements */
    int64_t n_nonfinite;   /* NaN or Inf inputs */
    int64_t n_nonzero;     /* finite non-zero inputs */
    int64_t n_sat;         /* finite inputs whose scaled magnitude exceeded elem_max */
    int64_t n_flushed;     /* finite non-zero inputs that quantized to zero */
    float amax;            /* max |x| over finite inputs */
    float scale;           /* per-tensor encode scale used (1 if none) */
    float scale_inv;       /* per-tensor decode scale (1 if none) */
    int64_t n_blocks;      /* block scales written */
    int64_t n_blocks_zero_scale;  /* block scales that are 0 (or 2^-127 for E8M0) */
    int64_t n_blocks_sat_scale;   /* block scales clamped at their format's max */
    float block_scale_min, block_scale_max; /* decoded, over blocks with a non-zero amax */
    double block_scale_log2_mean;           /* mean log2 of those */
} qp_qstats;

/* A quantized tensor in packed storage. */
typedef struct {
    qp_fmt fmt;
    int64_t rows, cols;
    int64_t row_bytes;     /* bytes of codes per row (padded to whole blocks) */
    int64_t scale_rows, scale_cols;
    uint8_t *codes;        /* rows x row_bytes */
    uint8_t *scales;       /* scale_rows x scale_cols, NULL if no block scales */
    float scale_inv;       /* per-tensor decode scale (1 for a row-scaled format) */
    float *row_scale_inv;  /* a row-scaled format (nvfp4-row): rows FP32 decode scales, one
                              per row, which replace scale_inv for that row; else NULL */
} qp_qtensor;

/* Storage sizes for a rows x cols tensor (an unknown fmt: -1, and no scales). */
int64_t qp_row_bytes(qp_fmt fmt, int64_t cols);
void qp_scale_shape(qp_fmt fmt, int64_t rows, int64_t cols, int64_t *scale_rows, int64_t *scale_cols);

/* Allocate / free packed storage (row_scale_inv too for a row-scaled
 * format); returns 0, or -1 on bad shape or no memory. */
int qp_qtensor_alloc(qp_qtensor *q, qp_fmt fmt, int64_t rows, int64_t cols);
void qp_qtensor_free(qp_qtensor *q);

/* Quantize x (rows x cols) into q (allocated for the same format and shape).
 * st may be NULL. Uses the fastest path this CPU has; identical output to
 * qp_quantize_ref. Returns 0, or -1 (nothing written) when q->fmt is not a
 * format or the shape is negative. */
int qp_quantize(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st);
/* The scalar reference every fast path is tested against. */
int qp_quantize_ref(const float *x, qp_qtensor *q, const qp_qopts *o, qp_qstats *st);
/* y (rows x cols) = decoded q (an unknown format: NaN everywhere): code x
 * block scale x tensor scale, what qp_qdq gives (a block whose UE4M3 scale
 * is 0: +0). */
void qp_dequantize(const qp_qtensor *q, float *y);
/* y (rows x cols) = the decoded element codes of q, without block or tensor
 * scales: what a tensor core multiplies before it applies the scales (the FP8
 * block formats' GEMM emulation, train/precision/qp_gemm.h). */
void qp_decode_codes(const qp_qtensor *q, float *y);
/* The decoded block scale of element (r, c) of q (1 without block scales). */
float qp_block_scale_at(const qp_qtensor *q, int64_t r, int64_t c);

/* Fused quantize-dequantize: y = dequantize(quantize(x)) exactly, without the
 * packed copy. y may equal x. Returns 0, or -1 (nothing written) for an
 * unknown fmt or a negative shape. */
int qp_qdq(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols,
           const qp_qopts *o, qp_qstats *st);
int qp_qdq_ref(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols,
               const qp_qopts *o, qp_qstats *st);
/* The same unscaled values (o->unscaled) as BF16 bits, what a BF16 GEMM
 * reads: y[i] = the high half of qp_qdq's y[i], which is exact for the
 * formats whose row says unscaled_exact. Returns -1 (nothing written) for
 * any other format, without o->unscaled, or as qp_qdq does. */
int qp_qdq_bf16(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, const qp_qopts *o,
                qp_qstats *st);
int qp_qdq_bf16_ref(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, const qp_qopts *o,
                    qp_qstats *st);

/* The statistics qp_qdq and qp_qdq_bf16 report (unscaled, round to
 * nearest, no blocks, tensor scale `scale`: 1 for a format without one) of
 * n elements a producer quantized and counted itself (qp_round_elem_tally). */
void qp_round_tally_stats(const qp_round_tally *t, int64_t n, float scale, qp_qstats *st);
/* Adds b's counts to a (threads that tallied parts of one tensor). */
void qp_round_tally_merge(qp_round_tally *a, const qp_round_tally *b);

/* qp_qdq_bf16 of the transpose of x (rows x cols, stored), rotated first by
 * the rht_n-point random Hadamard transform along its rows when rht_n is
 * not 0 (qp_transpose_rht's rotation, signs from rht_seed): the tensor a
 * weight-gradient GEMM contracts over x's rows, with its blocks down x's
 * columns. y gets the values in x's layout: y[r * cols + c] is element
 * (c, r) of the transposed result; the statistics and SR words (element
 * (c, r) has SR index o->sr_offset + c * stride + r, stride o->sr_row_stride
 * or rows) are qp_qdq_bf16's of the transposed tensor, and so are the bits.
 * Formats qp_qdq_cols_direct accepts are quantized from x where it lies,
 * without a transposed copy; others through one. Returns 0, or -1 (nothing
 * written) as qp_qdq_bf16 does, or for an rht_n that is not 0, 16, 32, 64
 * or 128 or does not divide rows. */
int qp_qdq_bf16_cols(qp_fmt fmt, const float *x, uint16_t *y, int64_t rows, int64_t cols, int rht_n,
                     uint64_t rht_seed, const qp_qopts *o, qp_qstats *st);
/* The same values as floats, what an FP32 GEMM reads (qp_qdq_bf16_cols
 * widened, bit for bit). */
int qp_qdq_cols(qp_fmt fmt, const float *x, float *y, int64_t rows, int64_t cols, int rht_n, uint64_t rht_seed,
                const qp_qopts *o, qp_qstats *st);
/* Whether qp_qdq_bf16_cols quantizes x where it lies, on a CPU with
 * AVX-512 and cols a multiple of 16: NVFP4's 1 x 16 blocks, rows a
 * multiple of 16, rht_n 0 or 16, SR indices on a multiple of 4; or an MX
 * format's 1 x 32 blocks, rows a multiple of 32, round to nearest, rht_n 0. */
int qp_qdq_cols_direct(qp_fmt fmt, int64_t rows, int64_t cols, int rht_n, const qp_qopts *o);

/* The magnitude a per-tensor scale maps amax onto (the row's tensor_range):
 * elem_max for FP8, 6*448 for NVFP4 (element max times block-scale max),
 * 6*256 for Four Over Six; 0 without a tensor scale or for an unknown fmt. */
float qp_tensor_scale_range(qp_fmt fmt);

/* Per-tensor amax over finite values (max is order-independent, so this is
 * deterministic with any vector width). */
float qp_amax(const float *x, int64_t n);

/* The fewest elements a tensor loop of quant/ (quantization, the Hadamard
 * transforms) and of the dispatch's transposes splits among OpenMP threads;
 * smaller tensors run on the calling thread. Speed only: the chunks and the
 * order they combine in, so every result, do not depend on it. Each parallel
 * region costs a handoff between threads: about a microsecond when they
 * spin, a thread wake-up when they wait passively on CPUs that other work
 * wants, so qtrain sets it from its waiting policy (qp_omp_parallel_min)
 * before any quantization. Values below 1 are taken as 1. */
#define QP_PARALLEL_MIN_DEFAULT ((int64_t)1 << 15)
void qp_set_parallel_min(int64_t n);
int64_t qp_parallel_min(void);

/* Which vector path runs: "avx512", "avx2" or "scalar". The environment
 * variable QP_SIMD=scalar|avx2|avx512 caps it (for tests and benchmarks). */
const char *qp_simd_name(void);

#ifdef __cplusplus
}
#endif
#endif
